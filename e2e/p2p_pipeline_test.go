package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// pipelineTasks is the number of tasks of TestP2PPipelineUnderSIGKILL:
// SYNAPSE_E2E_PIPELINE_TASKS, default 10,000 — 1,000 when the test binary
// runs under the race detector (make test's race suite, which has a time
// budget; the agents are the same non-race binaries either way, so the
// smaller count only shortens the run).
func pipelineTasks(t *testing.T) int {
	t.Helper()
	s := os.Getenv("SYNAPSE_E2E_PIPELINE_TASKS")
	if s == "" {
		if raceTest {
			return 1_000
		}
		return 10_000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 10 {
		t.Fatalf("SYNAPSE_E2E_PIPELINE_TASKS=%q: want a number ≥ 10", s)
	}
	return n
}

// backlog is how many messages A's outbox must hold for B while B is down
// before B is started again: more than a window (128), so the first
// rounds after each restart of B go with their window full.
const backlog = 300

// TestP2PPipelineUnderSIGKILL: A delegates N echo tasks to B, one client
// submitting them in order, while B and A are each killed with SIGKILL
// twice (B, A, B, A) and restarted on their data. Each time B is down its
// backlog grows past a window before it starts again, so the outbox sends
// to it with its window full (A's synapse_outbox_full_windows_total says
// so). Afterwards every task has completed exactly once on A and run
// exactly once on B, and B applied the requests in A's order (their
// created_at on B never goes back, and B's feed of its last run lists them
// in order).
func TestP2PPipelineUnderSIGKILL(t *testing.T) {
	n := pipelineTasks(t)
	begin := time.Now()
	a, b, aID, bID := startKillPair(t)

	// One client, in order: each task is acknowledged (durable, its request
	// queued) before the next is sent, so A's queue order is i's order.
	// Across A's restarts the idempotency key gives the same task.
	ids := make([]string, n)
	var submitted atomic.Int64
	subErr := make(chan error, 1)
	go func() {
		c := &loadClient{a: a, hc: newClient(1, requestTimeout), deadline: time.Now().Add(20 * time.Minute)}
		defer c.hc.CloseIdleConnections()
		for i := range n {
			id, _, err := c.submit("pipeline-"+strconv.Itoa(i), `{"task_type":"echo","payload":{"i":`+strconv.Itoa(i)+`},"target":"`+bID+`"}`)
			if err != nil {
				subErr <- err
				return
			}
			ids[i] = id
			submitted.Add(1)
		}
		subErr <- nil
	}()
	fullWindows := 0.0 // A's count, summed over its runs
	for k, victim := range []*agentProc{b, a, b, a} {
		at := int64(n * (k + 1) / 5)
		testutil.Eventually(t, 10*time.Minute, "submissions", func() bool { return submitted.Load() >= at })
		if victim == a {
			fullWindows += metricValue(t, a, "synapse_outbox_full_windows_total")
			victim.kill()
			victim.start()
			continue
		}
		victim.kill()
		want := min(float64(backlog), float64(int64(n)-submitted.Load()))
		testutil.Eventually(t, 10*time.Minute, "a backlog for B", func() bool {
			return metricValue(t, a, "synapse_outbox_pending") >= want
		})
		victim.start()
	}
	if err := <-subErr; err != nil {
		t.Fatal(err)
	}
	submittedIn := time.Since(begin)

	deadline := time.Now().Add(time.Duration(n)*20*time.Millisecond + time.Minute)
	hc := newClient(durClients, requestTimeout)
	defer hc.CloseIdleConnections()
	for { // a summary reads every task: poll it slowly
		by := a.summary(hc)
		if by["completed"]+by["failed"]+by["rejected"]+by["cancelled"] >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks on A after the deadline: %v, want %d final", by, n)
		}
		time.Sleep(500 * time.Millisecond) // poll interval
	}
	doneIn := time.Since(begin)
	fullWindows += metricValue(t, a, "synapse_outbox_full_windows_total")
	if fullWindows == 0 {
		t.Error("A never sent B a full window (synapse_outbox_full_windows_total is 0 in every run)")
	}
	onA := fetchTasks(t, a, hc, ids)
	onB := fetchTasks(t, b, hc, ids)
	var prevCreated string
	for i, id := range ids {
		va, vb := onA[id], onB[id]
		if c := countStatus(va, "completed"); va.Status != "completed" || c != 1 || va.ResultJSON != `{"i":`+strconv.Itoa(i)+`}` {
			t.Errorf("task %d on A: %s, completed %d times, result %q", i, va.Status, c, va.ResultJSON)
		}
		if c := countStatus(vb, "executing"); vb.Status != "completed" || c != 1 {
			t.Errorf("task %d on B: %s, run %d times", i, vb.Status, c)
		}
		if vb.CreatedAt < prevCreated {
			t.Errorf("task %d created on B at %s, before task %d (%s): applied out of order", i, vb.CreatedAt, i-1, prevCreated)
		}
		prevCreated = vb.CreatedAt
	}
	if got := len(b.listAll(hc)); got != n {
		t.Errorf("B has %d tasks, want %d", got, n)
	}
	// B's last run: its feed lists the requests it applied, in order.
	seen := lastRunRequests(t, b)
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	last := -1
	for _, id := range seen {
		i, ok := index[id]
		if !ok {
			t.Errorf("B's feed has a request for unknown task %s", id)
			continue
		}
		if i <= last {
			t.Errorf("B's last run applied request %d after request %d", i, last)
		}
		last = i
	}
	t.Logf("%d tasks: submitted in %v, all completed after %v; %v full windows from A; B's last run applied %d requests in order",
		n, submittedIn.Round(time.Second), doneIn.Round(time.Second), fullWindows, len(seen))
	testutil.Eventually(t, time.Minute, "empty outboxes", func() bool {
		return len(outboxIDs(t, a, "pending", bID))+len(outboxIDs(t, a, "dead", bID))+
			len(outboxIDs(t, b, "pending", aID))+len(outboxIDs(t, b, "dead", aID)) == 0
	})
}

// countStatus counts the transitions of v into status.
func countStatus(v taskView, status string) int {
	c := 0
	for _, h := range v.History {
		if h.Status == status {
			c++
		}
	}
	return c
}

// summary is a's count of tasks by status (GET /tasks/summary).
func (a *agentProc) summary(hc *http.Client) map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	r, err := a.send(ctx, hc, http.MethodGet, prefix+"/tasks/summary", nil)
	var s struct {
		ByStatus map[string]int `json:"by_status"`
	}
	if err != nil || r.status != http.StatusOK || json.Unmarshal(r.body, &s) != nil {
		return nil
	}
	return s.ByStatus
}

// lastRunRequests reads the task ids of the task requests in a's feed of
// received envelopes (its current run), in feed order.
func lastRunRequests(t *testing.T, a *agentProc) []string {
	t.Helper()
	return feedRequests(t, a, -1, 2*time.Second)
}

// startKillPair starts two agents paired with each other, with the P2P
// settings the kill tests use (retries every 50 ms, up to 30, heartbeats
// every second), and returns them with their agent ids.
func startKillPair(t *testing.T) (a, b *agentProc, aID, bID string) {
	t.Helper()
	config := filepath.Join(t.TempDir(), "p2p.json")
	writeJSON(t, config, map[string]any{"p2p": map[string]any{
		"max_retries": 30, "retry_base_delay_ms": 50, "heartbeat_interval_seconds": 1,
	}})
	a = startAgent(t, agentOpts{args: []string{"--config", config}})
	b = startAgent(t, agentOpts{args: []string{"--config", config}})
	aID, _ = identityOf(t, a)
	bID, _ = identityOf(t, b)
	for _, x := range [][2]*agentProc{{a, b}, {b, a}} {
		if r := x[0].call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+x[1].url()+`"}`)); r.status != http.StatusCreated {
			t.Fatalf("POST /agents %s: %s", x[1].url(), r)
		}
	}
	return a, b, aID, bID
}
