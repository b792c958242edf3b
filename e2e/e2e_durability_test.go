package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

// The durability test's bounds.
const (
	durClients      = 4
	durKills        = 5
	durMaxPerClient = 5000             // tasks one client submits at most
	durLoadLimit    = 20 * time.Second // the whole load phase
	durRetryEvery   = 10 * time.Millisecond
	durRequestLimit = 5 * time.Second
)

// ack is a task the agent acknowledged with 201.
type ack struct {
	n        int
	key      string
	taskID   string
	replayed bool
}

// ackLog collects the acknowledgements of all clients.
type ackLog struct {
	mu   sync.Mutex
	acks []ack
}

func (l *ackLog) add(a ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, a)
}

func (l *ackLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

func (l *ackLog) all() []ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// loadClient submits echo tasks with unique payload numbers and keys, and
// retries each one with the same key until it is acknowledged.
type loadClient struct {
	id       int
	a        *agentProc
	hc       *http.Client
	stop     <-chan struct{}
	deadline time.Time
	log      *ackLog
	attempts int
}

func (c *loadClient) run() error {
	defer c.hc.CloseIdleConnections()
	for i := range durMaxPerClient {
		select {
		case <-c.stop:
			return nil
		default:
		}
		n := c.id*1_000_000 + i
		key := fmt.Sprintf("durability-%d", n)
		body := fmt.Sprintf(`{"task_type":"echo","payload":{"n":%d}}`, n)
		id, replayed, err := c.submit(key, body)
		if err != nil {
			return fmt.Errorf("client %d, payload %d: %w", c.id, n, err)
		}
		c.log.add(ack{n: n, key: key, taskID: id, replayed: replayed})
	}
	return nil
}

// submit posts one task until the agent acknowledges it. Transport errors
// (the agent is down), 409 (the key's first request is still in flight),
// 429 and 503 are retried with the same key; anything else is an error.
func (c *loadClient) submit(key, body string) (id string, replayed bool, err error) {
	for {
		if time.Now().After(c.deadline) {
			return "", false, errors.New("not acknowledged before the deadline")
		}
		c.attempts++
		ctx, cancel := context.WithTimeout(context.Background(), durRequestLimit)
		r, err := c.a.send(ctx, c.hc, http.MethodPost, prefix+"/task", []byte(body), "Idempotency-Key", key)
		cancel()
		switch {
		case err != nil, r.status == http.StatusConflict, r.status == http.StatusTooManyRequests, r.status == http.StatusServiceUnavailable:
			time.Sleep(durRetryEvery) // retry pacing while the agent restarts
			continue
		case r.status != http.StatusCreated:
			return "", false, fmt.Errorf("POST /task: got %s, want 201", r)
		}
		var sr struct {
			TaskID string `json:"task_id"`
		}
		if err := json.Unmarshal(r.body, &sr); err != nil || sr.TaskID == "" {
			return "", false, fmt.Errorf("POST /task: 201 without a task_id: %s", r)
		}
		return sr.TaskID, r.header.Get("Idempotent-Replayed") == "true", nil
	}
}

// TestDurabilityUnderSIGKILL is the durability test: clients submit tasks
// while the agent is killed with SIGKILL at random moments and restarted on
// the same data directory. Every acknowledged task must exist afterwards,
// no payload may have become two tasks, every task must complete, and the
// file must pass db check.
func TestDurabilityUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("durability test: skipped with -short")
	}
	a := startAgent(t, agentOpts{env: []string{"SYNAPSE_MAX_CONCURRENT_TASKS=64"}})
	rng := killSchedule(t)

	stop := make(chan struct{})
	var acks ackLog
	errs := make(chan error, durClients)
	clients := make([]*loadClient, durClients)
	var wg sync.WaitGroup
	for i := range clients {
		clients[i] = &loadClient{
			id: i + 1, a: a, hc: newClient(2, durRequestLimit), stop: stop,
			deadline: time.Now().Add(durLoadLimit), log: &acks,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := clients[i].run(); err != nil {
				errs <- err
			}
		}()
	}
	finish := func() {
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}

	loadStart := time.Now()
	for k := range durKills {
		// The kill comes at a random moment of the load.
		wait := 200*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond)))
		select {
		case <-time.After(wait):
		case err := <-errs:
			errs <- err
			finish()
			t.FailNow()
		}
		before := acks.len()
		pid := a.pid()
		a.kill()
		t.Logf("kill %d: SIGKILL pid %d after %s of load, %d tasks acknowledged so far", k+1, pid, wait.Round(time.Millisecond), before)
		a.start()
	}
	// Load on the last process too, so that it serves retries and new keys.
	time.Sleep(300 * time.Millisecond) // more load, not a wait for a state
	finish()
	if t.Failed() {
		return
	}
	loadTook := time.Since(loadStart)

	all := acks.all()
	replays, attempts := 0, 0
	for _, ak := range all {
		if ak.replayed {
			replays++
		}
	}
	for _, c := range clients {
		attempts += c.attempts
	}
	t.Logf("%d tasks acknowledged in %s (%d requests, %d acknowledgements were replays)", len(all), loadTook.Round(time.Millisecond), attempts, replays)
	if len(all) < durKills {
		t.Fatalf("only %d tasks acknowledged: the load did not run", len(all))
	}

	hc := newClient(durClients, requestTimeout)
	defer hc.CloseIdleConnections()
	ids := a.listAll(hc)
	views := fetchTasks(t, a, hc, ids)

	t.Run("every acknowledged task exists", func(t *testing.T) {
		for _, ak := range all {
			v, ok := views[ak.taskID]
			if !ok {
				t.Errorf("task %s (payload %d, key %s) was acknowledged but is not listed", ak.taskID, ak.n, ak.key)
				continue
			}
			if got := payloadN(t, v); got != ak.n {
				t.Errorf("task %s: got payload n=%d, want %d", ak.taskID, got, ak.n)
			}
		}
	})

	t.Run("no payload twice", func(t *testing.T) {
		seen := map[int]string{}
		for _, id := range ids {
			n := payloadN(t, views[id])
			if other, dup := seen[n]; dup {
				t.Errorf("payload %d is in two tasks: %s and %s", n, other, id)
			}
			seen[n] = id
		}
		// A listed task nobody acknowledged can only be the last request
		// of a client still being retried when the load stopped.
		if extra := len(ids) - len(all); extra < 0 || extra > durClients {
			t.Errorf("got %d tasks listed and %d acknowledged; want at most %d unacknowledged", len(ids), len(all), durClients)
		}
	})

	t.Run("every task completes", func(t *testing.T) {
		deadline := time.Now().Add(15 * time.Second)
		for _, id := range ids {
			v := views[id]
			for !v.terminal() && time.Now().Before(deadline) {
				time.Sleep(pollEvery) // poll interval
				v = a.task(id)
			}
			if v.Status != "completed" {
				t.Errorf("task %s is %s (%s %s), want completed", id, v.Status, v.ErrorCode, v.ErrorMessage)
			}
		}
	})

	a.stop()
	code, out, errOut := runCLI(t, 30*time.Second, "db", "check", "--offline", "--data", a.dataDir, "--json")
	if code != 0 {
		t.Fatalf("synapse db check: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep struct {
		OK    bool `json:"ok"`
		Tasks int  `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("db check --json: %v in %s", err, out)
	}
	if !rep.OK || rep.Tasks != len(ids) {
		t.Errorf("db check: got ok=%v tasks=%d, want ok=true tasks=%d", rep.OK, rep.Tasks, len(ids))
	}
}

// fetchTasks reads GET /task/{id} for every id with a few workers.
func fetchTasks(t *testing.T, a *agentProc, hc *http.Client, ids []string) map[string]taskView {
	t.Helper()
	type result struct {
		id  string
		v   taskView
		err error
	}
	jobs := make(chan string)
	results := make(chan result)
	var wg sync.WaitGroup
	for range durClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range jobs {
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				r, err := a.send(ctx, hc, http.MethodGet, prefix+"/task/"+url.PathEscape(id), nil)
				cancel()
				var v taskView
				switch {
				case err != nil:
				case r.status != http.StatusOK:
					err = fmt.Errorf("GET /task/%s: %s", id, r)
				default:
					err = json.Unmarshal(r.body, &v)
				}
				results <- result{id, v, err}
			}
		}()
	}
	go func() {
		for _, id := range ids {
			jobs <- id
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	views := make(map[string]taskView, len(ids))
	for r := range results {
		if r.err != nil {
			t.Errorf("task %s: %v", r.id, r.err)
			continue
		}
		views[r.id] = r.v
	}
	if t.Failed() {
		t.FailNow()
	}
	return views
}

// payloadN is the payload number of an echo task of the durability test.
func payloadN(t *testing.T, v taskView) int {
	t.Helper()
	var p struct {
		N *int `json:"n"`
	}
	if err := json.Unmarshal(v.Payload, &p); err != nil || p.N == nil {
		t.Fatalf("task %s: payload %s has no number n (%v)", v.TaskID, v.Payload, err)
	}
	return *p.N
}

// killSchedule is the random source of a kill test's schedule, its seed
// logged so that a failing schedule can be replayed.
func killSchedule(t *testing.T) *rand.Rand {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("kill schedule seed %d", seed)
	return rand.New(rand.NewPCG(uint64(seed), 0x5eed))
}
