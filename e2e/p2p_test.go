package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// identityOf reads GET /identity.
func identityOf(t *testing.T, a *agentProc) (agentID, publicKey string) {
	t.Helper()
	r := a.call(http.MethodGet, prefix+"/identity", nil)
	var id struct {
		AgentID   string `json:"agent_id"`
		PublicKey string `json:"public_key"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &id) != nil || id.AgentID == "" {
		t.Fatalf("GET /identity: %s", r)
	}
	return id.AgentID, id.PublicKey
}

// outboxIDs lists the ids of a's outbox items of one state for peer.
func outboxIDs(t *testing.T, a *agentProc, state, peer string) []string {
	t.Helper()
	r := a.call(http.MethodGet, prefix+"/outbox?limit=1000&state="+state+"&peer="+url.QueryEscape(peer), nil)
	var body struct {
		Items []struct {
			ID       string `json:"id"`
			Attempts int    `json:"attempts"`
		} `json:"items"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil {
		t.Fatalf("GET /outbox: %s", r)
	}
	var ids []string
	for _, it := range body.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// peerStatus reads the status a has for peer.
func peerStatus(t *testing.T, a *agentProc, peer string) string {
	t.Helper()
	r := a.call(http.MethodGet, prefix+"/agents/"+url.PathEscape(peer), nil)
	var p struct {
		Status string `json:"status"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil {
		t.Fatalf("GET /agents/%s: %s", peer, r)
	}
	return p.Status
}

// receivedRequests reads the agent's feed of received envelopes from the
// start (of this process) and returns the task ids of the first n task
// requests, in arrival order.
func receivedRequests(t *testing.T, a *agentProc, n int) []string {
	t.Helper()
	return feedRequests(t, a, n, 30*time.Second)
}

// openFeed follows a's feed of received envelopes (GET
// /messages/callback from the start of its current run, for at most
// wait) and returns a scanner of its lines and the function that ends it.
func openFeed(t *testing.T, a *agentProc, wait time.Duration) (*bufio.Scanner, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url()+prefix+"/messages/callback", nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Last-Event-ID", "0")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		cancel()
		t.Fatalf("GET /messages/callback: %v", err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return sc, func() { resp.Body.Close(); cancel() }
}

// feedRequests reads a's feed of received envelopes (GET
// /messages/callback from the start of its current run) and returns the
// task ids of its task requests in feed order: the first n, or, with n <
// 0, all that arrive within wait (the feed is followed live).
func feedRequests(t *testing.T, a *agentProc, n int, wait time.Duration) []string {
	t.Helper()
	sc, end := openFeed(t, a, wait)
	defer end()
	var ids []string
	for (n < 0 || len(ids) < n) && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var env struct {
			MessageType string `json:"message_type"`
			Payload     struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(data), &env); err != nil {
			t.Fatalf("feed event is not an envelope: %v: %s", err, data)
		}
		if env.MessageType == "p2p:task_request" {
			ids = append(ids, env.Payload.Task.ID)
		}
	}
	return ids
}

// TestP2PStoreAndForward runs two agents as processes, pairs them through
// the API, delegates a task, then kills the executor with SIGKILL while
// requests are queued for it and keeps it down past the whole retry
// schedule: when it comes back, every task runs there once and completes
// once on the requester, without anyone retrying anything.
func TestP2PStoreAndForward(t *testing.T) {
	config := filepath.Join(t.TempDir(), "p2p.json")
	writeJSON(t, config, map[string]any{"p2p": map[string]any{
		"max_retries": 2, "retry_base_delay_ms": 200, "heartbeat_interval_seconds": 1,
	}})
	a := startAgent(t, agentOpts{args: []string{"--config", config}})
	b := startAgent(t, agentOpts{args: []string{"--config", config}})
	aID, _ := identityOf(t, a)
	bID, bKey := identityOf(t, b)

	for _, x := range [][2]*agentProc{{a, b}, {b, a}} {
		r := x[0].call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+x[1].url()+`"}`))
		if r.status != http.StatusCreated {
			t.Fatalf("POST /agents %s: %s", x[1].url(), r)
		}
	}
	if r := a.call(http.MethodGet, prefix+"/agents/"+bID, nil); r.status != http.StatusOK ||
		!strings.Contains(string(r.body), bKey) || !strings.Contains(string(r.body), `"online"`) {
		t.Fatalf("GET /agents/%s: %s, want the pinned key, online", bID, r)
	}

	t.Run("echo delegation", func(t *testing.T) {
		r := a.call(http.MethodPost, prefix+"/task?wait=30", []byte(`{"task_type":"echo","payload":{"hello":"b"},"target":"`+bID+`"}`))
		var v taskView
		if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
			t.Fatalf("POST /task?wait=30 with target: %s, want 200", r)
		}
		if v.Status != "completed" || v.ResultJSON != `{"hello":"b"}` {
			t.Errorf("delegated task = %s %q, want completed with the echo", v.Status, v.ResultJSON)
		}
		remote := b.task(v.TaskID)
		if remote.Status != "completed" || remote.ResultJSON != v.ResultJSON {
			t.Errorf("executor's task = %s %q", remote.Status, remote.ResultJSON)
		}
	})

	// Everything A owed B so far (the echo's acknowledgement) is
	// delivered before B goes down, so that the dead letters below are
	// exactly the new requests.
	testutil.Eventually(t, 30*time.Second, "A's outbox to B empty", func() bool { return len(outboxIDs(t, a, "pending", bID)) == 0 })
	b.kill()
	const n = 8
	var ids []string
	for i := range n {
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"i":`+strconv.Itoa(i)+`},"target":"`+bID+`"}`)
		ids = append(ids, id)
	}
	// Down past the retry schedule: every request is a dead letter and the
	// peer is offline.
	testutil.Eventually(t, 30*time.Second, "dead letters for every request", func() bool {
		return len(outboxIDs(t, a, "dead", bID)) == n && len(outboxIDs(t, a, "pending", bID)) == 0
	})
	testutil.Eventually(t, 30*time.Second, "offline peer", func() bool { return peerStatus(t, a, bID) == "offline" })

	b.start()
	t.Run("everything arrives once, in order", func(t *testing.T) {
		for i, id := range ids {
			v := a.waitTask(id, 30*time.Second, "final", taskView.terminal)
			completed := 0
			for _, h := range v.History {
				if h.Status == "completed" {
					completed++
				}
			}
			if v.Status != "completed" || completed != 1 || v.ResultJSON != `{"i":`+strconv.Itoa(i)+`}` {
				t.Errorf("task %d on the requester: %s, %d completions, result %q", i, v.Status, completed, v.ResultJSON)
			}
			remote := b.task(id)
			executing := 0
			for _, h := range remote.History {
				if h.Status == "executing" {
					executing++
				}
			}
			if remote.Status != "completed" || executing != 1 {
				t.Errorf("task %d on the executor: %s, run %d times", i, remote.Status, executing)
			}
		}
		hc := newClient(1, requestTimeout)
		defer hc.CloseIdleConnections()
		if onB := b.listAll(hc); len(onB) != n+1 {
			t.Errorf("executor has %d tasks, want %d (the echo, then each request once)", len(onB), n+1)
		}
		if got := receivedRequests(t, b, n); !slices.Equal(got, ids) {
			t.Errorf("executor received requests %v, want %v (queue order)", got, ids)
		}
		testutil.Eventually(t, 30*time.Second, "empty outboxes", func() bool {
			return len(outboxIDs(t, a, "pending", bID))+len(outboxIDs(t, a, "dead", bID))+
				len(outboxIDs(t, b, "pending", aID))+len(outboxIDs(t, b, "dead", aID)) == 0
		})
		if s := peerStatus(t, a, bID); s != "online" {
			t.Errorf("executor's status on the requester = %s, want online", s)
		}
	})
	a.stop()
	b.stop()
}
