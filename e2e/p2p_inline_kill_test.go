package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestInlineRequestsUnderSIGKILL is the kill test of the executor's inline
// run (agent/remote.go, runInline): B runs the handler of an idempotent
// task request before it stores the request, and stores it once, final,
// with its confirm, executing and outcome messages, and only then answers
// A. Four clients delegate echo and sleep tasks (0–4 ms, on both sides of
// the 2 ms inline budget, so both the inline and the slow path run) to B
// through A while B is killed with SIGKILL three times and A once, at
// random moments. Afterwards every task completed exactly once on A with
// its result, B holds each task once, final, with one executing
// transition, and the outboxes are empty.
func TestInlineRequestsUnderSIGKILL(t *testing.T) {
	const clients, perClient = 4, 150
	a, b, aID, bID := startKillPair(t)

	ids := make([]string, clients*perClient)
	results := make([]string, len(ids))
	var submitted atomic.Int64
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lc := &loadClient{a: a, hc: newClient(1, requestTimeout), deadline: time.Now().Add(10 * time.Minute)}
			defer lc.hc.CloseIdleConnections()
			for k := range perClient {
				i := c*perClient + k
				body, result := `{"task_type":"echo","payload":{"i":`+strconv.Itoa(i)+`}`, `{"i":`+strconv.Itoa(i)+`}`
				if i%3 == 0 {
					ms := i % 5
					body, result = `{"task_type":"sleep","payload":{"ms":`+strconv.Itoa(ms)+`}`, `{"slept_ms":`+strconv.Itoa(ms)+`}`
				}
				id, _, err := lc.submit("inline-"+strconv.Itoa(i), body+`,"target":"`+bID+`"}`)
				if err != nil {
					errs <- fmt.Errorf("task %d: %w", i, err)
					return
				}
				ids[i], results[i] = id, result
				submitted.Add(1)
			}
		}()
	}
	for k, victim := range []*agentProc{b, b, a, b} {
		at := int64(len(ids)*(k+1)/5) + rand.Int64N(int64(len(ids)/10))
		testutil.Eventually(t, 5*time.Minute, "submissions", func() bool { return submitted.Load() >= at })
		victim.kill()
		victim.start()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	hc := newClient(durClients, requestTimeout)
	defer hc.CloseIdleConnections()
	testutil.Eventually(t, 5*time.Minute, "every task final on A", func() bool {
		by := a.summary(hc)
		return by["completed"]+by["failed"]+by["rejected"]+by["cancelled"] >= len(ids)
	})
	onA := fetchTasks(t, a, hc, ids)
	onB := fetchTasks(t, b, hc, ids)
	for i, id := range ids {
		va, vb := onA[id], onB[id]
		if c := countStatus(va, "completed"); va.Status != "completed" || c != 1 || va.ResultJSON != results[i] {
			t.Errorf("task %d on A: %s, completed %d times, result %q, want %q", i, va.Status, c, va.ResultJSON, results[i])
		}
		n := len(vb.History)
		if c := countStatus(vb, "executing"); vb.Status != "completed" || c != 1 || n < 2 || vb.History[n-2].Status != "executing" {
			t.Errorf("task %d on B: %s, %d executing transitions, history %+v", i, vb.Status, c, vb.History)
		}
	}
	if got := len(b.listAll(hc)); got != len(ids) {
		t.Errorf("B has %d tasks, want %d", got, len(ids))
	}
	testutil.Eventually(t, time.Minute, "empty outboxes", func() bool {
		return len(outboxIDs(t, a, "pending", bID))+len(outboxIDs(t, a, "dead", bID))+
			len(outboxIDs(t, b, "pending", aID))+len(outboxIDs(t, b, "dead", aID)) == 0
	})
}
