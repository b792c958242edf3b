package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// TestSendMessage: seed 003 §4.2's SendMessage on POST /message beside
// the envelope route — {receiver_id, content_type, payload_json} answers
// {message_id, status}, and the peer receives a synapse:message envelope
// with that message_id, signed by this agent, on its message feed.
func TestSendMessage(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	a.pairWith(t, b)
	b.pairWith(t, a)
	bID := b.a.Identity().AgentID
	send := func(t *testing.T, body string, opts ...reqOpt) *reply {
		t.Helper()
		return a.do(t, "POST", api("/message"), []byte(body), opts...)
	}

	// feed reads b's message feed from the start until the message id.
	feed := func(t *testing.T, id string) sseEvent {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", b.base+api("/messages/callback"), nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("Last-Event-ID", "0")
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		r := &sseReader{br: bufio.NewReader(resp.Body)}
		for {
			e, err := r.next()
			if err != nil {
				t.Fatalf("b's feed ended before %s: %v", id, err)
			}
			if e.data["message_id"] == id {
				return e
			}
		}
	}

	t.Run("sent and received", func(t *testing.T) {
		r := send(t, `{"receiver_id":"`+bID+`","content_type":"json","payload_json":"{\"temp\":21.5}","correlation_id":"c-1","conversation_id":"talk-7"}`)
		r.wantStatus(t, http.StatusAccepted)
		var got wire.SendMessageResponse
		if err := json.Unmarshal(r.body, &got); err != nil || got.MessageID == "" || got.Status != wire.MessageQueued {
			t.Fatalf("answer %s, want {message_id, status: queued}", r.body)
		}
		e := feed(t, got.MessageID)
		sender, _ := e.data["sender"].(map[string]any)
		pl, _ := e.data["payload"].(map[string]any)
		inner, _ := pl["payload"].(map[string]any)
		if e.data["message_type"] != string(wire.MsgSynapseMessage) || sender["agent_id"] != a.a.Identity().AgentID ||
			e.data["correlation_id"] != "c-1" || pl["content_type"] != "json" || pl["conversation_id"] != "talk-7" || inner["temp"] != 21.5 {
			t.Errorf("b received %v, want a's synapse:message with the payload", e.data)
		}
	})

	t.Run("text", func(t *testing.T) {
		r := send(t, `{"receiver_id":"`+bID+`","content_type":"text","payload_json":"\"hello\""}`)
		r.wantStatus(t, http.StatusAccepted)
		id, _ := r.object(t)["message_id"].(string)
		if pl, _ := feed(t, id).data["payload"].(map[string]any); pl["payload"] != "hello" || pl["content_type"] != "text" {
			t.Errorf("b received payload %v, want the text hello", pl)
		}
	})

	t.Run("idempotent", func(t *testing.T) {
		body := `{"receiver_id":"` + bID + `","content_type":"text","payload_json":"\"once\""}`
		first := send(t, body, withHeader("Idempotency-Key", "msg-1"))
		again := send(t, body, withHeader("Idempotency-Key", "msg-1"))
		first.wantStatus(t, http.StatusAccepted)
		again.wantStatus(t, http.StatusAccepted)
		if string(first.body) != string(again.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("answers %s and %s (replayed %q), want the first replayed", first.body, again.body, again.header.Get("Idempotent-Replayed"))
		}
	})

	t.Run("refusals", func(t *testing.T) {
		ok := `{"receiver_id":"` + bID + `","content_type":"text","payload_json":"\"x\""}`
		send(t, ok, withToken("")).wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		send(t, ok, withToken(a.token(t, auth.ScopeTasksRead))).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		for _, tt := range []struct{ body, field string }{
			{`{"receiver_id":"","content_type":"text","payload_json":"\"x\""}`, "receiver_id"},
			{`{"receiver_id":"nobody","content_type":"text","payload_json":"\"x\""}`, "agent_id"},
			{`{"receiver_id":"` + bID + `","content_type":"video","payload_json":"\"x\""}`, "content_type"},
			{`{"receiver_id":"` + bID + `","content_type":"json"}`, "payload_json"},
			{`{"receiver_id":"` + bID + `","content_type":"json","payload_json":"{not json"}`, "payload_json"},
		} {
			e := send(t, tt.body).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
			d, _ := e["details"].(map[string]any)
			if d["field"] != tt.field && d[tt.field] == nil {
				t.Errorf("%s: details %v, want them to name %s", tt.body, d, tt.field)
			}
		}
		// Not a SendMessageRequest, not an envelope: the envelope route's answer.
		send(t, `{"content_type":"text"}`).wantError(t, http.StatusBadRequest, wire.CodeMessageFormatInvalid)
	})

	t.Run("a received message with a bad payload is refused", func(t *testing.T) {
		a.contractWith(t, b)
		// An envelope that names receiver_id in its payload is still an
		// envelope: it has tp_version.
		m := envelopeFrom(t, a, b, wire.MsgSynapseMessage, map[string]any{"content_type": "json", "payload": map[string]any{"receiver_id": bID}}, nil)
		if got := b.postEnvelope(t, envelopeJSON(t, m)); got.status != http.StatusAccepted || got.object(t)["accepted"] != true {
			t.Errorf("an envelope naming receiver_id: %d %s, want 202 accepted", got.status, got.body)
		}
		// Without its tp_version it is a bad envelope, not a
		// SendMessageRequest (which would want a token): 400, as every
		// door answers it.
		var obj map[string]any
		if err := json.Unmarshal(envelopeJSON(t, envelopeFrom(t, a, b, wire.MsgSynapseMessage,
			map[string]any{"content_type": "json", "payload": map[string]any{"receiver_id": bID}}, nil)), &obj); err != nil {
			t.Fatal(err)
		}
		delete(obj, "tp_version")
		stripped, _ := json.Marshal(obj)
		b.do(t, "POST", api("/message"), stripped, withToken("")).wantError(t, http.StatusBadRequest, wire.CodeMessageFormatInvalid)
		for _, pl := range []any{
			map[string]any{"content_type": "video", "payload": "x"},
			map[string]any{"content_type": "text"},
			"not an object",
		} {
			m := envelopeFrom(t, a, b, wire.MsgSynapseMessage, pl, nil)
			e := b.postEnvelope(t, envelopeJSON(t, m)).wantError(t, http.StatusBadRequest, wire.CodeMessageFormatInvalid)
			if msg, _ := e["message"].(string); !strings.Contains(msg, string(wire.MsgSynapseMessage)) {
				t.Errorf("refusal %v, want it to name the type", e)
			}
		}
	})
}
