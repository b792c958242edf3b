package httpapi_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/hooktest"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// checkSignature verifies X-Synapse-Signature by hand: t=<unix>,v1=<hex
// HMAC-SHA256(secret, "<t>.<body>")>.
func checkSignature(t *testing.T, header string, secret, body []byte) {
	t.Helper()
	var ts, v1 string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || v1 == "" {
		t.Fatalf("X-Synapse-Signature %q has no t or v1", header)
	}
	if d := time.Since(time.Unix(sec, 0)); d > time.Minute || d < -time.Minute {
		t.Errorf("signature time %s is far from now", time.Unix(sec, 0))
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	if want := hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(v1), []byte(want)) {
		t.Errorf("v1 = %s, want %s", v1, want)
	}
}

func TestWebhookCallback(t *testing.T) {
	secret := []byte("s3cret-for-hooks")
	p2p := peer.DefaultConfig()
	p2p.CallbackSecret, p2p.RetryBaseDelayMS, p2p.MaxRetries = string(secret), 10, 3
	ts := startPeerServerP2P(t, "a", p2p, allowLoopback)

	t.Run("signed, retried after 503, same message id", func(t *testing.T) {
		h := hooktest.New(t, func(n int) int {
			if n == 0 {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		id := ts.submit(t, `{"task_type":"echo","payload":{"v":"é<>"},"callback_url":"`+h.URL+`/cb"}`)
		testutil.Eventually(t, pollTimeout, "two webhook calls", func() bool { return len(h.Calls()) >= 2 })
		calls := h.Calls()
		if len(calls) != 2 {
			t.Fatalf("webhook called %d times, want 2 (one failure, one success)", len(calls))
		}
		mid := calls[0].Header.Get("X-Synapse-Message-Id")
		if mid == "" || calls[1].Header.Get("X-Synapse-Message-Id") != mid {
			t.Errorf("message ids %q and %q, want the same id on the retry", mid, calls[1].Header.Get("X-Synapse-Message-Id"))
		}
		last := calls[1]
		if ct := last.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		checkSignature(t, last.Header.Get("X-Synapse-Signature"), secret, last.Body)
		var got struct {
			TaskID     string `json:"task_id"`
			Status     string `json:"status"`
			ResultJSON string `json:"result_json"`
		}
		if err := json.Unmarshal(last.Body, &got); err != nil {
			t.Fatalf("callback body is not a TaskStatusResponse: %v\n%s", err, last.Body)
		}
		if got.TaskID != id || got.Status != "completed" || !jsonEqual(t, got.ResultJSON, `{"v":"é<>"}`) {
			t.Errorf("callback = %+v, want task %s completed with its result", got, id)
		}
		testutil.Eventually(t, pollTimeout, "an empty outbox", func() bool {
			return strings.Contains(string(ts.do(t, "GET", api("/outbox"), nil).body), `"items":[]`)
		})
	})

	t.Run("410 stops at once", func(t *testing.T) {
		h := hooktest.New(t, func(int) int { return http.StatusGone })
		ts.submit(t, `{"task_type":"echo","payload":{},"callback_url":"`+h.URL+`"}`)
		var items []map[string]any
		testutil.Eventually(t, pollTimeout, "a dead letter", func() bool {
			var body struct {
				Items []map[string]any `json:"items"`
			}
			_ = json.Unmarshal(ts.do(t, "GET", api("/outbox?state=dead&url="+h.URL), nil).body, &body)
			items = body.Items
			return len(items) == 1
		})
		if len(h.Calls()) != 1 || items[0]["attempts"] != 1.0 || !strings.Contains(items[0]["last_error"].(string), "410") {
			t.Errorf("after 410: %d calls, dead letter %v; want one call and a dead letter", len(h.Calls()), items[0])
		}
	})
}

// dialMessages opens GET /messages/stream with a token.
// TestWebhookCallbackUnsigned: without p2p.callback_secret_env the
// callback is sent unsigned (no X-Synapse-Signature), still with its
// X-Synapse-Message-Id, once, when the task reaches a final state (a
// cancelled one too).
func TestWebhookCallbackUnsigned(t *testing.T) {
	ts := startPeerServerP2P(t, "a", peer.DefaultConfig(), allowLoopback)
	h := hooktest.New(t, func(int) int { return http.StatusNoContent })
	id := ts.submit(t, `{"task_type":"echo","payload":{},"callback_url":"`+h.URL+`/done"}`)
	slow := ts.submit(t, `{"task_type":"sleep","payload":{"ms":60000},"callback_url":"`+h.URL+`/cancelled"}`)
	ts.do(t, "POST", api("/task/"+slow+"/cancel"), nil)
	testutil.Eventually(t, pollTimeout, "two webhook calls", func() bool { return len(h.Calls()) >= 2 })
	got := map[string]string{}
	for _, c := range h.Calls() {
		if sig := c.Header.Get("X-Synapse-Signature"); sig != "" {
			t.Errorf("a callback without a secret carries X-Synapse-Signature %q", sig)
		}
		if c.Header.Get("X-Synapse-Message-Id") == "" {
			t.Errorf("a callback has no X-Synapse-Message-Id")
		}
		var body struct {
			TaskID string `json:"task_id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(c.Body, &body); err != nil {
			t.Fatalf("callback body: %v\n%s", err, c.Body)
		}
		got[body.TaskID] = body.Status
	}
	if got[id] != "completed" || got[slow] != "cancelled" || len(h.Calls()) != 2 {
		t.Errorf("callbacks %v (%d calls), want %s completed and %s cancelled, one call each", got, len(h.Calls()), id, slow)
	}
}

func dialMessages(t *testing.T, ts *testServer, token string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if hdr == nil {
		hdr = http.Header{}
	}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.base, "http")+api("/messages/stream"), hdr)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// toMsgpack converts an envelope's payload to msgpack before it is signed
// (a signature covers the payload's bytes in the codec it travels in).
func toMsgpack(t *testing.T) func(m *wire.UnifiedSynapseMessage) {
	return func(m *wire.UnifiedSynapseMessage) {
		p, err := m.Payload.Convert(wire.PayloadMsgpack)
		if err != nil {
			t.Fatal(err)
		}
		m.Payload = p
	}
}

func readFrame(t *testing.T, c *websocket.Conn) (int, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
	mt, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return mt, b
}

func TestMessageStream(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	a.pairWith(t, b)
	b.pairWith(t, a)
	b.contractWith(t, a)
	pub, _ := base64.StdEncoding.DecodeString(a.a.Identity().PublicKey)

	t.Run("envelopes in both framings", func(t *testing.T) {
		c, _, err := dialMessages(t, a, adminToken, nil)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		q := envelopeFrom(t, b, a, wire.MsgCapabilityQuery, nil, nil)
		if err := c.WriteMessage(websocket.TextMessage, envelopeJSON(t, q)); err != nil {
			t.Fatal(err)
		}
		// The admin connection is an observer too: it sees the query
		// pushed, and the answer, in either order.
		var answer *wire.UnifiedSynapseMessage
		for range 2 {
			mt, data := readFrame(t, c)
			if mt != websocket.TextMessage {
				t.Fatalf("frame type %d, want text", mt)
			}
			m, err := wire.DecodeEnvelope(data, false)
			if err != nil {
				t.Fatalf("frame is not an envelope: %v: %s", err, data)
			}
			if m.MessageType == wire.MsgCapabilityResponse {
				answer = m
			} else if m.MessageID != q.MessageID {
				t.Errorf("pushed %s %s, want the query %s", m.MessageType, m.MessageID, q.MessageID)
			}
		}
		if answer == nil || answer.CorrelationID != q.MessageID || wire.Verify(answer, pub) != nil {
			t.Fatalf("answer = %+v, want a signed capability response to the query", answer)
		}

		w, _, err := dialMessages(t, a, adminToken, http.Header{}) // a second observer
		if err != nil {
			t.Fatal(err)
		}
		tok := a.do(t, "POST", api("/tokens"), []byte(`{"name":"w","scopes":["tasks:write"]}`)).object(t)["token"].(string)
		s, _, err := dialMessages(t, a, tok, nil) // a sender, not an observer
		if err != nil {
			t.Fatal(err)
		}
		taskID := uuid.NewString()
		req := envelopeFrom(t, b, a, wire.MsgTaskRequest, echoRequest(taskID), toMsgpack(t))
		bin, err := wire.EncodeEnvelopeMsgpack(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteMessage(websocket.BinaryMessage, bin); err != nil {
			t.Fatal(err)
		}
		mt, data := readFrame(t, s)
		var acc struct {
			Accepted  bool   `msgpack:"accepted"`
			MessageID string `msgpack:"message_id"`
		}
		if mt != websocket.BinaryMessage || wire.Msgpack.Unmarshal(data, &acc) != nil || !acc.Accepted || acc.MessageID != req.MessageID {
			t.Fatalf("answer to a msgpack request: type %d %q, want binary accepted", mt, data)
		}
		a.waitStatus(t, taskID, wire.StatusCompleted)
		mt, data = readFrame(t, w)
		if mt != websocket.BinaryMessage || string(data) != string(bin) {
			t.Errorf("observer got type %d %d bytes, want the msgpack envelope as received", mt, len(data))
		}
		if err := s.WriteMessage(websocket.TextMessage, []byte(`{"not":"an envelope"}`)); err != nil {
			t.Fatal(err)
		}
		mt, data = readFrame(t, s)
		var eb wire.ErrorBody
		if mt != websocket.TextMessage || json.Unmarshal(data, &eb) != nil || eb.Error == nil || eb.Error.Code != wire.CodeMessageFormatInvalid {
			t.Errorf("answer to garbage: %s, want message_format_invalid", data)
		}
		if err := s.WriteMessage(websocket.BinaryMessage, bin); err != nil {
			t.Fatal(err)
		}
		_, data = readFrame(t, s)
		var dup struct {
			Duplicate bool           `msgpack:"duplicate"`
			Code      wire.ErrorCode `msgpack:"code"`
		}
		if wire.Msgpack.Unmarshal(data, &dup) != nil || !dup.Duplicate || dup.Code != wire.CodeIDDuplicate {
			t.Errorf("answer to a replay: %q, want a TP-ID004 duplicate", data)
		}
	})

	t.Run("a frame over 1 MiB closes with 1009", func(t *testing.T) {
		c, _, err := dialMessages(t, a, adminToken, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.WriteMessage(websocket.TextMessage, []byte(`"`+strings.Repeat("x", 1<<20)+`"`))
		_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
		for range 10 { // skip pushes that may precede the close
			if _, _, err = c.ReadMessage(); err != nil {
				break
			}
		}
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Errorf("read after an oversized frame: %v, want close 1009", err)
		}
	})

	t.Run("refused connections", func(t *testing.T) {
		hdr := http.Header{}
		hdr.Set("Origin", "http://evil.example")
		if _, resp, err := dialMessages(t, a, adminToken, hdr); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("foreign Origin: %v %v, want 403", err, resp)
		}
		if _, resp, err := dialMessages(t, a, "", nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token: %v %v, want 401", err, resp)
		}
	})
}

// TestMessageStreamShutdown: on shutdown /messages/stream answers the
// envelopes it has read and then closes with 1001 (going away), as the
// other streams do, so that a peer knows to reconnect elsewhere or later
// rather than take it for a broken link.
func TestMessageStreamShutdown(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	a.pairWith(t, b)
	b.pairWith(t, a)
	tok := a.do(t, "POST", api("/tokens"), []byte(`{"name":"s","scopes":["tasks:write"]}`)).object(t)["token"].(string)
	c, _, err := dialMessages(t, a, tok, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	q := envelopeFrom(t, b, a, wire.MsgCapabilityQuery, nil, nil)
	if err := c.WriteMessage(websocket.TextMessage, envelopeJSON(t, q)); err != nil {
		t.Fatal(err)
	}
	if _, data := readFrame(t, c); !strings.Contains(string(data), q.MessageID) {
		t.Fatalf("answer to the query: %s, want its capability response", data)
	}
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.srv.Shutdown(ctx); err != nil { // the node's server: the agent stays open
			t.Errorf("Shutdown: %v", err)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
	_, _, err = c.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("stream ended with %v, want close 1001", err)
	}
	<-shut
}

func TestMessageFeed(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	a.pairWith(t, b)
	b.pairWith(t, a)
	var sent []string
	for range 3 {
		m := envelopeFrom(t, b, a, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: "online", MaxTasks: 10}, nil)
		a.postEnvelope(t, envelopeJSON(t, m)).wantStatus(t, http.StatusAccepted)
		sent = append(sent, m.MessageID)
	}
	open := func(t *testing.T, last string) *sseReader {
		ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", a.base+api("/messages/callback"), nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := a.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("GET /messages/callback: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return &sseReader{br: bufio.NewReader(resp.Body)}
	}
	t.Run("from the start", func(t *testing.T) {
		r := open(t, "0")
		for i, id := range sent {
			e, err := r.next()
			if err != nil {
				t.Fatal(err)
			}
			if e.event != "message" || e.id != uint64(i+1) || e.data["message_id"] != id || e.data["message_type"] != string(wire.MsgHeartbeat) {
				t.Errorf("event %d = %d %s %v, want message %s", i, e.id, e.event, e.data["message_id"], id)
			}
		}
	})
	t.Run("resume and follow", func(t *testing.T) {
		r := open(t, "2")
		e, err := r.next()
		if err != nil || e.id != 3 || e.data["message_id"] != sent[2] {
			t.Fatalf("first event after Last-Event-ID 2 = %v %v, want 3", e, err)
		}
		m := envelopeFrom(t, b, a, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: "online", MaxTasks: 10}, nil)
		a.postEnvelope(t, envelopeJSON(t, m)).wantStatus(t, http.StatusAccepted)
		e, err = r.next()
		if err != nil || e.id != 4 || e.data["message_id"] != m.MessageID {
			t.Fatalf("live event = %v %v, want 4 for %s", e, err, m.MessageID)
		}
	})
	a.do(t, "GET", api("/messages/callback"), nil, withToken("")).wantError(t, 401, wire.CodeUnauthorized)
}
