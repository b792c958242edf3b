package wire_test

import (
	"bytes"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestMessageTypeBytes: a MessageType held in a payload field encodes
// exactly as the plain string it names, in both codecs (the envelope's
// own message_type is pinned by the signature vectors, which re-encode
// each envelope byte for byte).
func TestMessageTypeBytes(t *testing.T) {
	typed := &wire.TaskAckPayload{TaskID: "t1", AckedType: wire.MsgTaskCancel, Status: wire.StatusCancelled}
	plain := struct {
		TaskID    string      `json:"task_id" msgpack:"task_id"`
		AckedType string      `json:"acked_type,omitempty" msgpack:"acked_type,omitempty"`
		Status    wire.Status `json:"status,omitempty" msgpack:"status,omitempty"`
	}{"t1", "p2p:task_cancel", wire.StatusCancelled}
	for _, c := range []wire.Codec{wire.JSON, wire.Msgpack} {
		got, err := c.Marshal(typed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Marshal(&plain)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: typed %q, plain %q", c.ContentType(), got, want)
		}
		if !bytes.Contains(got, []byte("p2p:task_cancel")) {
			t.Errorf("%s: %q does not carry the type as a string", c.ContentType(), got)
		}
		var back wire.TaskAckPayload
		if err := c.Unmarshal(got, &back); err != nil || back != *typed {
			t.Errorf("%s: round trip = %+v, %v; want %+v", c.ContentType(), back, err, *typed)
		}
	}
}
