// Package export forwards the tier-1 export log (the batches the ingestor
// queues, package tier1's outbox.go) to named exports: each an upstream
// agent (http(s) or ws(s)) or the MQTT broker, with its own durable
// cursor, routines, priority, batch size and linger, back-off, start
// position (all, new, since a time), order (live_first or fifo) and
// bandwidth cap, under a global cap.
//
// A cursor is a record of the store's meta bucket ("t1_export/<name>"):
// the position below which the export is done, and while a backlog
// drains in live_first order, a live lane: batches queued after the split
// go out first, and the backlog [low, live_from) drains with what is
// left. Positions carry the log's running frame and byte totals, so an
// export counts its backlog, sends and drops without decoding, and a gap
// (entries pruned by retention or quotas before the export sent them)
// counts as dropped: stored = sent + dropped + queued, per export, always.
// A log entry is deleted once every configured export is past it.
//
// Compression (Config.Compression, default auto): an HTTP upstream
// announces the codings it takes in the Accept-Encoding of its answers
// (RFC 7694); the export remembers the last answer's and compresses the
// next windows in a coding announced (package bodycodec), never in one
// that was not, so an older upstream gets plain batches. The caps and the
// rate count the compressed bytes; raw_bytes and wire_bytes in the status
// give the ratio. WebSocket and MQTT batches go plain: the WebSocket
// library compresses (permessage-deflate) inside its frame writer, where
// the caps could not count the bytes, and MQTT has no negotiation.
//
// The command builds the Set (cli/serve.go) from the "exports" list and
// the "uplink" shorthand, and serves its Status through the HTTP API and
// the CLI.
package export
