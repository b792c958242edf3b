package peer_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// postBatch posts a batch to n and returns the status, the error code of
// a refusal and the decoded answer.
func postBatch(t *testing.T, n *peerNode, req *peer.BatchRequest) (int, wire.ErrorCode, *peer.BatchAnswer) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(n.url()+peer.BatchPath, wire.ContentJSON, bytes.NewReader(body))
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
		task, err := req.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), Target: exe.id()}, nil)
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
		return len(outbox(t, req.a, store.OutboxPending))+len(outbox(t, exe.a, store.OutboxPending)) == 0
	})
	if d := len(outbox(t, req.a, store.OutboxDead)) + len(outbox(t, exe.a, store.OutboxDead)); d != 0 {
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
// one from then on. Either way every task completes and nothing is given
// up.
func TestBatchesNeedAnnouncement(t *testing.T) {
	for _, mode := range []string{"hidden", "refused"} {
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
				if mode == "hidden" {
					r.Header.Del(peer.HeaderBatch)
				}
				return nil
			}
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == peer.BatchPath {
					batchPosts.Add(1)
					http.Error(w, "404 page not found", http.StatusNotFound) // an agent without the route
					return
				}
				rp.ServeHTTP(w, r)
			}))
			t.Cleanup(proxy.Close)
			// The requester knows the executor by the proxy's address.
			if _, _, err := req.Network.AddPeer(context.Background(), proxy.URL); err != nil {
				t.Fatal(err)
			}
			if _, _, err := exe.Network.AddPeer(context.Background(), req.url()); err != nil {
				t.Fatal(err)
			}
			const n = 120
			ids := make([]string, n)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					task, err := req.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), Target: exe.id()}, nil)
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
			if d := len(outbox(t, req.a, store.OutboxDead)); d != 0 {
				t.Errorf("%d dead letters", d)
			}
			switch got := batchPosts.Load(); {
			case mode == "hidden" && got != 0:
				t.Errorf("%d batches sent to a peer that did not announce them", got)
			case mode == "refused" && (got < 1 || got > 2):
				// The first round of batches (two at most), then none.
				t.Errorf("%d batches sent to a peer that refused the first ones, want 1 or 2", got)
			}
		})
	}
}
