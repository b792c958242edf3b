// Package frame reads and writes framed envelopes: the headers of POST
// /message before an envelope, on wires that have no headers of their own.
package frame

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The headers of POST /message on wires that carry one
// envelope per message and no headers of their own (a WebSocket message
// of GET /messages/stream, the envelope field of a gRPC StreamMessages
// message).
//
// Such a message is either the envelope alone (JSON or msgpack), or a
// header block followed by it:
//
//	X-Synapse-Signature: t=1700000000,v1=...\n
//	X-Synapse-Seq: 42\n
//	X-Synapse-Seq-Prev: 41\n
//	\n
//	<the envelope's bytes, exactly as signed>
//
// The block starts with "X-Synapse-" (an envelope never does: JSON starts
// with '{' or white space, msgpack with a map byte), holds at most
// maxFrameHeaders lines "Name: value" (CRLF is also accepted) of the three
// names above, each at most once, and ends with an empty line; it is at
// most maxFrameHeaderBytes long. The HMAC of X-Synapse-Signature covers
// the envelope's bytes only. Anything else is refused with 400
// message_format_invalid.

// Limits of a frame's header block.
const (
	maxFrameHeaders     = 3
	maxFrameHeaderBytes = 4 << 10
)

// framePrefix starts a header block.
var framePrefix = []byte("X-Synapse-")

// frameHeaders are the names a header block may hold, in canonical form.
var frameHeaders = map[string]string{
	strings.ToLower(wire.HeaderSignature):    wire.HeaderSignature,
	strings.ToLower(transport.HeaderSeq):     transport.HeaderSeq,
	strings.ToLower(transport.HeaderSeqPrev): transport.HeaderSeqPrev,
}

// Split separates a framed envelope into its headers (nil when it
// has none) and the envelope's bytes (a subslice of data).
func Split(data []byte) (map[string]string, []byte, error) {
	if !bytes.HasPrefix(data, framePrefix) {
		return nil, data, nil
	}
	bad := func(format string, args ...any) error {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "frame header: "+format, args...)
	}
	header := map[string]string{}
	rest := data
	for {
		if len(data)-len(rest) > maxFrameHeaderBytes {
			return nil, nil, bad("longer than %d bytes", maxFrameHeaderBytes)
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return nil, nil, bad("no empty line before the envelope")
		}
		line := bytes.TrimSuffix(rest[:i], []byte("\r"))
		rest = rest[i+1:]
		if len(line) == 0 {
			break
		}
		if len(header) == maxFrameHeaders {
			return nil, nil, bad("more than %d lines", maxFrameHeaders)
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, nil, bad("line %q is not \"Name: value\"", truncate(line))
		}
		canon, known := frameHeaders[strings.ToLower(string(name))]
		if !known {
			return nil, nil, bad("unknown header %q", truncate(name))
		}
		if _, dup := header[canon]; dup {
			return nil, nil, bad("%s given twice", canon)
		}
		header[canon] = string(bytes.TrimSpace(value))
	}
	if len(data)-len(rest) > maxFrameHeaderBytes {
		return nil, nil, bad("longer than %d bytes", maxFrameHeaderBytes)
	}
	return header, rest, nil
}

// Append appends the frame of body with header (the names of Split) to
// b.
func Append(b []byte, header map[string]string, body []byte) []byte {
	some := false
	for _, name := range []string{wire.HeaderSignature, transport.HeaderSeq, transport.HeaderSeqPrev} {
		if v, ok := header[name]; ok {
			b = fmt.Appendf(b, "%s: %s\n", name, v)
			some = true
		}
	}
	if some {
		b = append(b, '\n')
	}
	return append(b, body...)
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
