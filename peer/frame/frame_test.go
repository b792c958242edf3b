package frame_test

import (
	"bytes"
	"maps"
	"testing"

	"github.com/synapse-edge/synapse/peer/frame"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

func TestSplit(t *testing.T) {
	env := []byte(`{"tp_version":"1.0"}`)
	for _, tc := range []struct {
		name   string
		in     string
		header map[string]string
		body   string
		bad    bool
	}{
		{name: "bare", in: string(env), body: string(env)},
		{name: "headers", in: "X-Synapse-Signature: t=1,v1=ab\nX-Synapse-Seq: 2\nX-Synapse-Seq-Prev: 1\n\n" + string(env),
			header: map[string]string{wire.HeaderSignature: "t=1,v1=ab", transport.HeaderSeq: "2", transport.HeaderSeqPrev: "1"}, body: string(env)},
		{name: "crlf", in: "x-synapse-seq: 7\r\n\r\n" + string(env), bad: true}, // lower case does not start a block
		{name: "crlf canonical", in: "X-Synapse-Seq: 7\r\n\r\n" + string(env), header: map[string]string{transport.HeaderSeq: "7"}, body: string(env)},
		{name: "no blank line", in: "X-Synapse-Seq: 7\n" + string(env), bad: true},
		{name: "unknown", in: "X-Synapse-Other: 7\n\n" + string(env), bad: true},
		{name: "twice", in: "X-Synapse-Seq: 7\nX-Synapse-Seq: 8\n\n" + string(env), bad: true},
		{name: "no colon", in: "X-Synapse-Seq 7\n\n" + string(env), bad: true},
		{name: "too long", in: "X-Synapse-Seq: " + string(bytes.Repeat([]byte("1"), 5000)) + "\n\n{}", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := frame.Split([]byte(tc.in))
			if tc.name == "crlf" { // a lower-case first line is no block: the envelope decoder refuses it
				if err != nil || string(body) != tc.in {
					t.Fatalf("got %v %q, want the data back as the envelope", err, body)
				}
				return
			}
			if tc.bad {
				if err == nil || wire.AsError(err).Code != wire.CodeMessageFormatInvalid {
					t.Fatalf("got %v, want message_format_invalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tc.body || !maps.Equal(h, tc.header) {
				t.Fatalf("got %v %q, want %v %q", h, body, tc.header, tc.body)
			}
			if tc.header != nil {
				if got := frame.Append(nil, h, body); !bytes.Equal(got, []byte(tc.in)) && !bytes.Contains([]byte(tc.in), []byte("\r")) {
					t.Fatalf("AppendFrame = %q, want %q", got, tc.in)
				}
			}
		})
	}
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte("X-Synapse-Signature: t=1,v1=ab\nX-Synapse-Seq: 2\nX-Synapse-Seq-Prev: 1\n\n{}"))
	f.Add([]byte("{}"))
	f.Add([]byte("X-Synapse-Seq: 7\r\n\r\n\x81\xa1a\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, err := frame.Split(data)
		if err != nil {
			return
		}
		if len(h) == 0 {
			if !bytes.Equal(body, data) && !bytes.HasPrefix(data, []byte("X-Synapse-")) {
				t.Fatalf("a frame without headers changed: %q", data)
			}
			return
		}
		h2, body2, err := frame.Split(frame.Append(nil, h, body))
		if err != nil || !bytes.Equal(body, body2) || !maps.Equal(h, h2) {
			t.Fatalf("round trip of %q: %v %q %v", data, h2, body2, err)
		}
	})
}
