package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestFoldedStartUnderSIGKILL kills the agent while idempotent tasks run
// whose executing state is not written before their handler (it is written
// with the final state when the handler ends within the engine's inline
// budget, else when the budget passes): sleeps of 0 to 40 ms, so both
// happen, submitted without waiting and acknowledged once durable. Every
// acknowledged task must exist afterwards, once, and complete with its
// result, its history a chain of transitions through executing.
func TestFoldedStartUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test: skipped with -short")
	}
	const (
		clients = 3
		kills   = 3
	)
	a := startAgent(t, agentOpts{env: []string{"SYNAPSE_MAX_CONCURRENT_TASKS=64"}})
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0xf01d))
	t.Logf("kill schedule seed %d", seed)

	stop := make(chan struct{})
	var acks ackLog
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c := &loadClient{id: i + 1, a: a, hc: newClient(2, durRequestLimit), stop: stop,
			deadline: time.Now().Add(durLoadLimit), log: &acks}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.hc.CloseIdleConnections()
			for j := range durMaxPerClient {
				select {
				case <-stop:
					return
				default:
				}
				n := c.id*1_000_000 + j
				key := fmt.Sprintf("fold-%d", n)
				body := fmt.Sprintf(`{"task_type":"sleep","payload":{"ms":%d,"n":%d}}`, n%41, n)
				id, replayed, err := c.submit(key, body)
				if err != nil {
					errs <- fmt.Errorf("client %d, payload %d: %w", c.id, n, err)
					return
				}
				acks.add(ack{n: n, key: key, taskID: id, replayed: replayed})
			}
		}()
	}
	for k := range kills {
		wait := 150*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
		time.Sleep(wait) // a random moment of the load, not a wait for a state
		before := acks.len()
		a.kill()
		t.Logf("kill %d after %s of load, %d tasks acknowledged so far", k+1, wait.Round(time.Millisecond), before)
		a.start()
	}
	time.Sleep(200 * time.Millisecond) // load on the last process too
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	all := acks.all()
	if len(all) < kills {
		t.Fatalf("only %d tasks acknowledged: the load did not run", len(all))
	}
	hc := newClient(clients, requestTimeout)
	defer hc.CloseIdleConnections()
	ids := a.listAll(hc)
	views := fetchTasks(t, a, hc, ids)
	seen := map[int]string{}
	for _, id := range ids {
		n := payloadN(t, views[id])
		if other, dup := seen[n]; dup {
			t.Errorf("payload %d is in two tasks: %s and %s", n, other, id)
		}
		seen[n] = id
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, ak := range all {
		v, ok := views[ak.taskID]
		if !ok {
			t.Errorf("task %s (payload %d) was acknowledged but is not listed", ak.taskID, ak.n)
			continue
		}
		for !v.terminal() && time.Now().Before(deadline) {
			time.Sleep(pollEvery) // poll interval
			v = a.task(ak.taskID)
		}
		if want := fmt.Sprintf(`{"slept_ms":%d}`, ak.n%41); v.Status != "completed" || v.ResultJSON != want {
			t.Errorf("task %s: %s %s %s, want completed with %s", v.TaskID, v.Status, v.ErrorCode, v.ResultJSON, want)
			continue
		}
		h := v.History
		ok = len(h) >= 4 && h[0].Status == "pending" && h[len(h)-2].Status == "executing" && h[len(h)-1].Status == "completed"
		for i := 1; ok && i < len(h); i++ {
			ok = h[i].From == h[i-1].Status
		}
		if !ok {
			t.Errorf("task %s: history %+v is not pending … executing, completed", v.TaskID, h)
		}
	}
	t.Logf("%d tasks acknowledged, %d listed", len(all), len(ids))
}
