package peer_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// postBatch posts a batch to n and returns the status, the error code of
// a refusal and the decoded answer.
func postBatch(t *testing.T, n *peerNode, req *peer.BatchRequest) (int, wire.ErrorCode, *peer.BatchAnswer) {
	t.Helper()
	return postSignedBatch(t, n, req, nil)
}

// postSignedBatch is postBatch with the batch signature sign returns for
// the body (none when sign is nil).
func postSignedBatch(t *testing.T, n *peerNode, req *peer.BatchRequest, sign func(body []byte) string) (int, wire.ErrorCode, *peer.BatchAnswer) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	hr, err := http.NewRequest(http.MethodPost, n.url()+peer.BatchPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", wire.ContentJSON)
	if sign != nil {
		hr.Header.Set(peer.HeaderBatchSignature, sign(body))
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var eb wire.ErrorBody
		if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
			return resp.StatusCode, eb.Error.Code, nil
		}
		return resp.StatusCode, "", nil
	}
	var ans peer.BatchAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("batch answer %s: %v", raw, err)
	}
	return resp.StatusCode, "", &ans
}

// item is a batch item of m.
func item(t *testing.T, m *wire.UnifiedSynapseMessage, seq, prev uint64) peer.BatchItem {
	t.Helper()
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return peer.BatchItem{Seq: seq, Prev: prev, Envelope: b}
}

// TestBatchReceive: a receiver announces batches, applies a batch's
// envelopes in their order with one result each (a duplicate answered as
// one), refuses the successor of a refused envelope at once instead of
// letting it wait, and refuses a batch it cannot read as a whole.
func TestBatchReceive(t *testing.T) {
	a := startPeer(t, "receiver")
	b := startPeer(t, "sender")
	pair(t, a, b)
	me := b.a.Identity()
	key := peerKey(t, b)
	heartbeat := func(at time.Time) *wire.UnifiedSynapseMessage {
		pl, err := wire.NewJSONPayload(&wire.HeartbeatPayload{Status: peer.PeerOnline, MaxTasks: 10})
		if err != nil {
			t.Fatal(err)
		}
		m := wire.NewMessage(wire.MsgHeartbeat, wire.AgentRef{AgentID: me.AgentID}, wire.AgentRef{AgentID: a.id()}, pl, at)
		if err := wire.Sign(m, key); err != nil {
			t.Fatal(err)
		}
		return m
	}
	body, err := wire.EncodeEnvelopeJSON(heartbeat(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(a.url()+peer.MessagePath, wire.ContentJSON, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(peer.HeaderBatch); resp.StatusCode != http.StatusAccepted || got != "256" {
		t.Errorf("POST /message answered %d, %s: %q; want 202, 256", resp.StatusCode, peer.HeaderBatch, got)
	}

	feed := a.a.Messages()
	from := feed.Last()
	msgs := []*wire.UnifiedSynapseMessage{heartbeat(time.Now()), heartbeat(time.Now()), heartbeat(time.Now())}
	status, code, ans := postBatch(t, a, &peer.BatchRequest{Messages: []peer.BatchItem{
		item(t, msgs[0], 10, 0), item(t, msgs[1], 20, 10), item(t, msgs[2], 30, 20)}})
	if status != http.StatusOK || len(ans.Results) != 3 {
		t.Fatalf("batch: %d %s %+v", status, code, ans)
	}
	for i, r := range ans.Results {
		var acc peer.Accepted
		if r.Status != http.StatusAccepted || json.Unmarshal(r.Body, &acc) != nil || acc.MessageID != msgs[i].MessageID {
			t.Errorf("result %d: %d %s %v, want 202 accepted %s", i, r.Status, r.Body, r.Error, msgs[i].MessageID)
		}
	}
	got, _ := feed.Since(from)
	var order []string
	for _, m := range got {
		order = append(order, m.MessageID)
	}
	if len(order) != 3 || order[0] != msgs[0].MessageID || order[1] != msgs[1].MessageID || order[2] != msgs[2].MessageID {
		t.Errorf("feed order %v, want the batch's order", order)
	}
	if n := metric(t, a.a, "synapse_p2p_batches_received_total"); n != 1 {
		t.Errorf("synapse_p2p_batches_received_total %v, want 1", n)
	}

	t.Run("duplicate", func(t *testing.T) {
		fresh := heartbeat(time.Now())
		_, _, ans := postBatch(t, a, &peer.BatchRequest{Messages: []peer.BatchItem{
			item(t, msgs[1], 20, 10), item(t, fresh, 40, 30)}})
		if ans == nil || len(ans.Results) != 2 {
			t.Fatalf("answer %+v", ans)
		}
		var acc peer.Accepted
		if r := ans.Results[0]; r.Status != http.StatusOK || json.Unmarshal(r.Body, &acc) != nil || !acc.Duplicate || acc.Code != wire.CodeIDDuplicate {
			t.Errorf("message 20 again: %d %s, want 200 duplicate", r.Status, r.Body)
		}
		if r := ans.Results[1]; r.Status != http.StatusAccepted {
			t.Errorf("message 40: %d %v, want 202", r.Status, r.Error)
		}
	})
	t.Run("refused in the middle", func(t *testing.T) {
		start := time.Now()
		_, _, ans := postBatch(t, a, &peer.BatchRequest{Messages: []peer.BatchItem{
			item(t, heartbeat(time.Now()), 50, 40),
			item(t, heartbeat(time.Now().Add(-time.Hour)), 60, 50), // stale: refused
			item(t, heartbeat(time.Now()), 70, 60),
		}})
		if ans == nil || len(ans.Results) != 3 {
			t.Fatalf("answer %+v", ans)
		}
		want := []struct {
			status int
			code   wire.ErrorCode
		}{{http.StatusAccepted, ""}, {http.StatusUnauthorized, wire.CodeIDStaleTimestamp}, {http.StatusServiceUnavailable, wire.CodeAgentNotReady}}
		for i, w := range want {
			r := ans.Results[i]
			var c wire.ErrorCode
			if r.Error != nil {
				c = r.Error.Code
			}
			if r.Status != w.status || c != w.code {
				t.Errorf("result %d: %d %s, want %d %s", i, r.Status, c, w.status, w.code)
			}
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the batch took %v: the successor of a refused message waited for it", d)
		}
	})
	t.Run("unreadable", func(t *testing.T) {
		other := heartbeat(time.Now())
		other.Sender.AgentID = "someone_else"
		many := make([]peer.BatchItem, peer.MaxBatch+1)
		for i := range many {
			many[i] = peer.BatchItem{Seq: uint64(i + 1), Envelope: json.RawMessage(`{}`)}
		}
		for name, req := range map[string]*peer.BatchRequest{
			"empty":        {},
			"two senders":  {Messages: []peer.BatchItem{item(t, heartbeat(time.Now()), 80, 0), item(t, other, 90, 80)}},
			"seq 0":        {Messages: []peer.BatchItem{item(t, heartbeat(time.Now()), 0, 0)}},
			"prev >= seq":  {Messages: []peer.BatchItem{item(t, heartbeat(time.Now()), 5, 5)}},
			"not envelope": {Messages: []peer.BatchItem{{Seq: 3, Envelope: json.RawMessage(`[1,2]`)}}},
			"too many":     {Messages: many},
		} {
			if status, code, _ := postBatch(t, a, req); status != http.StatusBadRequest || code != wire.CodeMessageFormatInvalid {
				t.Errorf("%s: %d %s, want 400 %s", name, status, code, wire.CodeMessageFormatInvalid)
			}
		}
	})
}

// TestBatchSignedAsAWhole: a receiver announces batches signed as a
// whole and takes unsigned envelopes in a batch whose signature verifies
// with the sender's pinned key; a batch signature that does not verify
// (another body, key or receiver) refuses the whole batch, and unsigned
// envelopes without one are refused one by one.
func TestBatchSignedAsAWhole(t *testing.T) {
	a := startPeer(t, "receiver")
	b := startPeer(t, "sender")
	pair(t, a, b)
	me := b.a.Identity()
	key := peerKey(t, b)
	unsigned := func() *wire.UnifiedSynapseMessage {
		pl, err := wire.NewJSONPayload(&wire.HeartbeatPayload{Status: peer.PeerOnline, MaxTasks: 10})
		if err != nil {
			t.Fatal(err)
		}
		return wire.NewMessage(wire.MsgHeartbeat, wire.AgentRef{AgentID: me.AgentID}, wire.AgentRef{AgentID: a.id()}, pl, time.Now())
	}
	hello := unsigned()
	if err := wire.Sign(hello, key); err != nil {
		t.Fatal(err)
	}
	body, err := wire.EncodeEnvelopeJSON(hello)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(a.url()+peer.MessagePath, wire.ContentJSON, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(peer.HeaderBatchSigning); resp.StatusCode != http.StatusAccepted || got != peer.BatchSigningEd25519 {
		t.Errorf("%s: %q, want %q", peer.HeaderBatchSigning, got, peer.BatchSigningEd25519)
	}
	signFor := func(priv ed25519.PrivateKey, receiver string) func([]byte) string {
		return func(body []byte) string {
			sig, err := wire.SignBatch(priv, me.AgentID, receiver, body)
			if err != nil {
				t.Fatal(err)
			}
			return sig
		}
	}
	batch := func(seq uint64) *peer.BatchRequest {
		return &peer.BatchRequest{Messages: []peer.BatchItem{item(t, unsigned(), seq, 0), item(t, unsigned(), seq+1, seq)}}
	}

	status, code, ans := postSignedBatch(t, a, batch(10), signFor(key, a.id()))
	if status != http.StatusOK || len(ans.Results) != 2 {
		t.Fatalf("signed batch: %d %s %+v", status, code, ans)
	}
	for i, r := range ans.Results {
		if r.Status != http.StatusAccepted {
			t.Errorf("result %d: %d %v, want 202", i, r.Status, r.Error)
		}
	}

	_, other, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, sign := range map[string]func([]byte) string{
		"other key":      signFor(other, a.id()),
		"other receiver": signFor(key, "edge_someone_else"),
		"other body":     func([]byte) string { return signFor(key, a.id())([]byte(`{}`)) },
		"garbage":        func([]byte) string { return "not a signature" },
	} {
		if status, code, _ := postSignedBatch(t, a, batch(20), sign); status != http.StatusUnauthorized || code != wire.CodeIDUnknownSender {
			t.Errorf("%s: %d %s, want 401 %s", name, status, code, wire.CodeIDUnknownSender)
		}
	}
	status, code, ans = postSignedBatch(t, a, batch(30), nil)
	if status != http.StatusOK || len(ans.Results) != 2 {
		t.Fatalf("unsigned batch: %d %s %+v", status, code, ans)
	}
	if r := ans.Results[0]; r.Status != http.StatusUnauthorized || r.Error == nil || r.Error.Code != wire.CodeIDUnknownSender {
		t.Errorf("unsigned envelope without a batch signature: %d %v, want 401 %s", r.Status, r.Error, wire.CodeIDUnknownSender)
	}
}

// checkBatchSigning tells what is wrong with a batch that should (signed)
// or should not be signed as a whole ("": nothing).
func checkBatchSigning(body []byte, batchSig string, signed bool) string {
	var req peer.BatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return "a batch that is not JSON: " + err.Error()
	}
	if signed != (batchSig != "") {
		return fmt.Sprintf("batch signature %q, want one: %v", batchSig, signed)
	}
	for _, it := range req.Messages {
		m, err := wire.DecodeEnvelopeJSON(it.Envelope)
		if err != nil {
			return "an envelope that does not decode: " + err.Error()
		}
		if signed != (m.Signature == "") {
			return fmt.Sprintf("an envelope signed %v in a batch signed as a whole %v", m.Signature != "", signed)
		}
	}
	return ""
}

// quickRetries makes the outbox retry within milliseconds, many times.
func quickRetries() peer.Options {
	c := peer.DefaultConfig()
	c.RetryBaseDelayMS = 20
	c.MaxRetries = 30
	return peer.Options{Config: &c}
}

// TestBatchDelivery: a backlog of delegated tasks drains to a peer that
// took batches in full windows; the peer creates the tasks in the order
// the requester queued them, runs each once, and every task completes.
// With an HMAC secret shared, batches are signed and checked as a whole.
func TestBatchDelivery(t *testing.T) {
	for _, hmac := range []bool{false, true} {
		name := "plain"
		if hmac {
			name = "hmac"
		}
		t.Run(name, func(t *testing.T) { testBatchDelivery(t, hmac) })
	}
}

func testBatchDelivery(t *testing.T, hmac bool) {
	id := func(self string) func(*agent.Config) {
		return func(c *agent.Config) { c.AgentID = self }
	}
	secret := func(other string) peer.Options {
		o := quickRetries()
		if hmac {
			o.Config.PeerSecrets = []peer.PeerSecretConfig{{AgentID: other, Secrets: [][]byte{[]byte("batch-secret-0123456789")}}}
		}
		return o
	}
	req := startPeerNet(t, "requester", secret("edge_executor_0000b2"), roomy, id("edge_requester_0000a1"))
	exe := startPeerNet(t, "executor", secret("edge_requester_0000a1"), roomy, id("edge_executor_0000b2"))
	pair(t, req, exe)
	exe.stop()
	const n = 200
	ids := make([]string, n)
	for i := range ids {
		task, err := req.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), Target: exe.id()}, agent.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = task.ID
	}
	// One message at a time until the peer's first answer announces
	// ordering and batches; then windows.
	exe.open()
	for _, id := range ids {
		if task := waitFinal(t, req.a, id); task.Status != wire.StatusCompleted {
			t.Fatalf("task %s: %s", id, describe(task))
		}
	}
	var prev time.Time
	for i, id := range ids {
		task, err := exe.a.Task(id)
		if err != nil {
			t.Fatalf("task %d on the executor: %v", i, err)
		}
		if task.CreatedAt.Before(prev) {
			t.Errorf("task %d created at %v, before task %d (%v): applied out of order", i, task.CreatedAt, i-1, prev)
		}
		prev = task.CreatedAt
		if c := countStatus(task, wire.StatusExecuting); c != 1 {
			t.Errorf("task %d ran %d times on the executor", i, c)
		}
	}
	if b := metric(t, req.a, "synapse_outbox_batches_total"); b == 0 {
		t.Error("the requester sent no batch")
	}
	if w := metric(t, req.a, "synapse_outbox_full_windows_total"); w == 0 {
		t.Error("no round to the executor filled its window")
	}
	testutil.Eventually(t, 30*time.Second, "empty outboxes", func() bool {
		return len(outboxOf(t, req.a, outbox.Pending))+len(outboxOf(t, exe.a, outbox.Pending)) == 0
	})
	if d := len(outboxOf(t, req.a, outbox.Dead)) + len(outboxOf(t, exe.a, outbox.Dead)); d != 0 {
		t.Errorf("%d dead letters", d)
	}
	if hmac {
		if r := metric(t, exe.a, `synapse_p2p_refused_total{code="TP-ID003"}`); r != 0 {
			t.Errorf("%v envelopes refused for their signature", r)
		}
	}
}

// TestBatchesNeedAnnouncement: batches go only to a peer that announces
// them. A peer behind a proxy that hides the announcement (an agent that
// does not know batches) gets one message per request; a peer that
// announces them but refuses a batch as a whole gets its messages one by
// one from then on. Batches are signed as a whole only for a peer that
// announces that ("signed"), with their envelopes unsigned; otherwise
// ("unsigned") every envelope carries its signature. Either way every
// task completes and nothing is given up.
func TestBatchesNeedAnnouncement(t *testing.T) {
	for _, mode := range []string{"hidden", "refused", "unsigned", "signed"} {
		t.Run(mode, func(t *testing.T) {
			req := startPeerNet(t, "requester", quickRetries(), roomy)
			exe := startPeerNet(t, "executor", quickRetries(), roomy)
			target, err := url.Parse(exe.url())
			if err != nil {
				t.Fatal(err)
			}
			var batchPosts atomic.Int64
			rp := httputil.NewSingleHostReverseProxy(target)
			rp.ModifyResponse = func(r *http.Response) error {
				switch mode {
				case "hidden":
					r.Header.Del(peer.HeaderBatch)
				case "unsigned":
					r.Header.Del(peer.HeaderBatchSigning)
				}
				return nil
			}
			var badBatch atomic.Value
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != peer.BatchPath {
					rp.ServeHTTP(w, r)
					return
				}
				batchPosts.Add(1)
				if mode == "hidden" || mode == "refused" {
					http.Error(w, "404 page not found", http.StatusNotFound) // an agent without the route
					return
				}
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				if why := checkBatchSigning(body, r.Header.Get(peer.HeaderBatchSignature), mode == "signed"); why != "" {
					badBatch.Store(why)
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(proxy.Close)
			// The requester knows the executor by the proxy's address.
			if _, _, err := req.Network.Pairing().AddPeer(context.Background(), proxy.URL); err != nil {
				t.Fatal(err)
			}
			if _, _, err := exe.Network.Pairing().AddPeer(context.Background(), req.url()); err != nil {
				t.Fatal(err)
			}
			const n = 120
			ids := make([]string, n)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					task, err := req.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), Target: exe.id()}, agent.SubmitOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					ids[i] = task.ID
				}()
			}
			wg.Wait()
			for _, id := range ids {
				if id == "" {
					t.FailNow()
				}
				if task := waitFinal(t, req.a, id); task.Status != wire.StatusCompleted {
					t.Fatalf("task %s: %s", id, describe(task))
				}
			}
			if d := len(outboxOf(t, req.a, outbox.Dead)); d != 0 {
				t.Errorf("%d dead letters", d)
			}
			switch got := batchPosts.Load(); {
			case mode == "hidden" && got != 0:
				t.Errorf("%d batches sent to a peer that did not announce them", got)
			case mode == "refused" && (got < 1 || got > 2):
				// The first round of batches (two at most), then none.
				t.Errorf("%d batches sent to a peer that refused the first ones, want 1 or 2", got)
			case (mode == "signed" || mode == "unsigned") && got == 0:
				t.Error("no batch sent")
			}
			if why := badBatch.Load(); why != nil {
				t.Error(why)
			}
		})
	}
}
