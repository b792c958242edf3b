// Package bodycodec is the content codings of tier-1 batches on the
// wire: gzip (RFC 1952) and deflate (the zlib format of RFC 1950, which
// HTTP's "deflate" coding names), from the standard library.
//
// The upstream's side: Decode inflates a body within a limit (the
// route's tier1.max_batch_bytes). It stops reading the moment the
// output passes the limit, so a small body that would inflate to
// gigabytes (a "gzip bomb") costs at most limit+1 bytes and a bounded
// amount of CPU, and is refused as ErrTooLarge; a truncated or corrupt
// stream, trailing bytes after it, or a bad checksum is ErrCorrupt; a
// coding this package does not know is ErrUnsupported. Nothing decoded
// from a bad body is returned.
//
// The exporter's side: Encoder compresses a batch at Level (BestSpeed:
// see bench/README.md, "Export compression", for the CPU per MB against
// the ratio on synapse.telemetry), its writers pooled. Pick reads the
// upstream's announcement (an Accept-Encoding value, RFC 7694 §3) and
// returns the coding to send with.
package bodycodec
