package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/wire"
)

// TestStreamPanicRecovered (issue #15, item 9): a panic while handling an
// envelope read from GET /messages/stream — here a group handler that
// panics — is answered internal_error like POST /message answers 500, the
// stream goes on, and the process lives. (Before, the panic happened on
// the hijacked connection's goroutine, outside every recover, and ended
// the process — this test binary included.)
func TestStreamPanicRecovered(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	a.pairWith(t, b)
	b.pairWith(t, a)
	b.contractWith(t, a)
	a.net.Inbound().HandleGroupMessages(func(context.Context, string, *wire.UnifiedSynapseMessage) error {
		panic("a bug in a group handler")
	})
	tok := a.do(t, "POST", api("/tokens"), []byte(`{"name":"w","scopes":["tasks:write"]}`)).object(t)["token"].(string)
	c, _, err := dialMessages(t, a, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(typ wire.MessageType) []byte {
		t.Helper()
		m := envelopeFrom(t, b, a, typ, map[string]any{"group_id": "g1"}, nil)
		if err := c.WriteMessage(websocket.TextMessage, envelopeJSON(t, m)); err != nil {
			t.Fatal(err)
		}
		_, data := readFrame(t, c)
		return data
	}
	var eb wire.ErrorBody
	if got := send(wire.MsgGroupMessage); json.Unmarshal(got, &eb) != nil || eb.Error == nil || eb.Error.Code != wire.CodeInternal {
		t.Fatalf("answer to the envelope that panics: %s, want internal_error", got)
	}
	var next wire.ErrorBody
	if got := send(wire.MsgCapabilityQuery); json.Unmarshal(got, &next) == nil && next.Error != nil {
		t.Fatalf("the next envelope on the same stream: %s, want an answer", got)
	}
	r := a.postEnvelope(t, envelopeJSON(t, envelopeFrom(t, b, a, wire.MsgGroupMessage, map[string]any{"group_id": "g1"}, nil)))
	if r.status != http.StatusInternalServerError {
		t.Errorf("POST /message with the same kind of envelope: %d %s, want 500", r.status, r.body)
	}
}
