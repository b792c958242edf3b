package mqtt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// A frame is the payload of every message on an agent's inbox topic: a
// request (an envelope for the agent) or an answer (what the agent
// answered to a request it got). MQTT 3.1.1 has no message properties,
// so the few things HTTP carries in headers travel in the frame. Layout,
// all integers big-endian:
//
//	offset size  field
//	0      4     magic "SYNQ"
//	4      1     version, 1
//	5      1     type: 1 request, 2 answer
//	6      1     n, then n bytes: the frame id (1..64 bytes), chosen by
//	             the requester; an answer repeats it
//	.      1     n, then n bytes: the agent_id of the frame's sender
//	             (1..255 bytes, a valid topic level): a request's answer
//	             goes to that agent's inbox
//	.      2     status: the HTTP status of an answer (100..599); 0 in a
//	             request
//	.      1     n, then n bytes: the body's content type (0..255 bytes)
//	.      1     header count (0..16), then per header: 1 byte n, n bytes
//	             of name (1..64; each name once), 2 bytes m, m bytes of
//	             value (0..1024)
//	.      4     n (at most MaxFrameBody), then n bytes: the body (the
//	             envelope, or the answer's body)
//
// and nothing after. Every string is valid UTF-8. A frame that breaks any
// of these rules is refused whole, before anything is allocated for a
// length it declares.
const (
	frameMagic   = "SYNQ"
	frameVersion = 1

	frameRequest = 1
	frameAnswer  = 2

	maxFrameID     = 64
	maxHeaders     = 16
	maxHeaderName  = 64
	maxHeaderValue = 1024
)

// MaxFrameBody bounds the body of a frame (an envelope): 4 MiB.
const MaxFrameBody = 4 << 20

// ErrFrame is wrapped by every refusal of a malformed frame.
var ErrFrame = errors.New("mqtt: malformed inbox frame")

// frame is one decoded inbox message.
type frame struct {
	typ    byte
	id     string
	from   string
	status int
	ctype  string
	header map[string]string
	body   []byte
}

// appendFrame encodes f after dst.
func appendFrame(dst []byte, f *frame) ([]byte, error) {
	switch {
	case f.typ != frameRequest && f.typ != frameAnswer:
		return nil, fmt.Errorf("%w: type %d", ErrFrame, f.typ)
	case len(f.id) == 0 || len(f.id) > maxFrameID:
		return nil, fmt.Errorf("%w: id of %d bytes", ErrFrame, len(f.id))
	case !validLevel(f.from) || len(f.from) > 255:
		return nil, fmt.Errorf("%w: sender %q", ErrFrame, f.from)
	case len(f.ctype) > 255:
		return nil, fmt.Errorf("%w: content type of %d bytes", ErrFrame, len(f.ctype))
	case len(f.header) > maxHeaders:
		return nil, fmt.Errorf("%w: %d headers", ErrFrame, len(f.header))
	case len(f.body) > MaxFrameBody:
		return nil, fmt.Errorf("%w: body of %d bytes, at most %d", ErrFrame, len(f.body), MaxFrameBody)
	case f.status < 0 || f.status > 599:
		return nil, fmt.Errorf("%w: status %d", ErrFrame, f.status)
	}
	dst = append(dst, frameMagic...)
	dst = append(dst, frameVersion, f.typ, byte(len(f.id)))
	dst = append(dst, f.id...)
	dst = append(dst, byte(len(f.from)))
	dst = append(dst, f.from...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(f.status))
	dst = append(dst, byte(len(f.ctype)))
	dst = append(dst, f.ctype...)
	dst = append(dst, byte(len(f.header)))
	for k, v := range f.header {
		if len(k) == 0 || len(k) > maxHeaderName || len(v) > maxHeaderValue {
			return nil, fmt.Errorf("%w: header %q", ErrFrame, k)
		}
		dst = append(dst, byte(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
		dst = append(dst, v...)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(f.body)))
	return append(dst, f.body...), nil
}

// frameReader reads the fields of a frame, each checked against what is
// left.
type frameReader struct {
	b   []byte
	err error
}

func (r *frameReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrFrame}, args...)...)
	}
}

func (r *frameReader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("%s declares %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *frameReader) uint(size int, what string) int {
	v := r.bytes(size, what)
	switch len(v) {
	case 1:
		return int(v[0])
	case 2:
		return int(binary.BigEndian.Uint16(v))
	}
	return 0
}

func (r *frameReader) str(lenSize, min, max int, what string) string {
	n := r.uint(lenSize, what+" length")
	if r.err == nil && (n < min || n > max) {
		r.fail("%s of %d bytes (want %d..%d)", what, n, min, max)
	}
	v := r.bytes(n, what)
	if r.err == nil && !utf8.Valid(v) {
		r.fail("%s is not UTF-8", what)
	}
	return string(v)
}

// parseFrame decodes one inbox message. The body aliases b.
func parseFrame(b []byte) (*frame, error) {
	r := &frameReader{b: b}
	if string(r.bytes(4, "magic")) != frameMagic {
		r.fail("not a Synapse inbox frame")
	}
	if v := r.uint(1, "version"); r.err == nil && v != frameVersion {
		r.fail("version %d, this agent speaks %d", v, frameVersion)
	}
	f := &frame{}
	f.typ = byte(r.uint(1, "type"))
	if r.err == nil && f.typ != frameRequest && f.typ != frameAnswer {
		r.fail("type %d", f.typ)
	}
	f.id = r.str(1, 1, maxFrameID, "id")
	f.from = r.str(1, 1, 255, "sender")
	if r.err == nil && !validLevel(f.from) {
		r.fail("sender %q is not a topic level", f.from)
	}
	f.status = r.uint(2, "status")
	if r.err == nil && f.typ == frameAnswer && (f.status < 100 || f.status > 599) {
		r.fail("answer status %d", f.status)
	}
	if r.err == nil && f.typ == frameRequest && f.status != 0 {
		r.fail("request with status %d", f.status)
	}
	f.ctype = r.str(1, 0, 255, "content type")
	nh := r.uint(1, "header count")
	if r.err == nil && nh > maxHeaders {
		r.fail("%d headers, at most %d", nh, maxHeaders)
	}
	if r.err == nil && nh > 0 {
		f.header = make(map[string]string, nh)
		for i := 0; i < nh && r.err == nil; i++ {
			k := r.str(1, 1, maxHeaderName, "header name")
			if _, dup := f.header[k]; dup && r.err == nil {
				r.fail("header %q twice", k)
			}
			f.header[k] = r.str(2, 0, maxHeaderValue, "header value")
		}
	}
	var n uint32
	if v := r.bytes(4, "body length"); r.err == nil {
		n = binary.BigEndian.Uint32(v)
		if n > MaxFrameBody {
			r.fail("body of %d bytes, at most %d", n, MaxFrameBody)
		}
	}
	f.body = r.bytes(int(n), "body")
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the body", len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return f, nil
}
