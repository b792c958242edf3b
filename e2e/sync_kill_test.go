package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The sync-mode kill test's bounds.
const (
	syncKillClients = 4
	syncKills       = 3
	syncKillTasks   = 3000 // a client's tasks at most
	syncKillLoad    = 15 * time.Second
)

// TestSyncEchoUnderSIGKILL: clients run echo tasks in the sync mode
// (POST /task?wait=, answered 200 once the task is stored final, its
// events kept in its record: schema 4) while the agent is killed with
// SIGKILL and restarted. Every task answered 200 must be there afterwards,
// completed, with its payload, and its event stream must replay its five
// events in order; db check must pass.
func TestSyncEchoUnderSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kill test: skipped with -short")
	}
	a := startAgent(t, agentOpts{env: []string{"SYNAPSE_MAX_CONCURRENT_TASKS=64"}})
	rng := killSchedule(t)

	type done struct {
		n  int
		id string
	}
	var (
		mu    sync.Mutex
		acked []done
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	errs := make(chan error, syncKillClients)
	deadline := time.Now().Add(syncKillLoad)
	for c := range syncKillClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := newClient(1, durRequestLimit)
			defer hc.CloseIdleConnections()
			for i := range syncKillTasks {
				select {
				case <-stop:
					return
				default:
				}
				if time.Now().After(deadline) {
					return
				}
				n := (c+1)*1_000_000 + i
				body := fmt.Sprintf(`{"task_type":"echo","payload":{"n":%d}}`, n)
				ctx, cancel := context.WithTimeout(context.Background(), durRequestLimit)
				r, err := a.send(ctx, hc, http.MethodPost, prefix+"/task?wait=10", []byte(body))
				cancel()
				if err != nil || r.status == http.StatusServiceUnavailable || r.status == http.StatusTooManyRequests {
					time.Sleep(durRetryEvery) // the agent is down: pace the next request
					continue                  // not acknowledged: nothing to check
				}
				var v taskView
				if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || v.Status != "completed" {
					errs <- fmt.Errorf("POST /task?wait=10 %s: got %s, want 200 completed", body, r)
					return
				}
				mu.Lock()
				acked = append(acked, done{n, v.TaskID})
				mu.Unlock()
			}
		}()
	}
	for k := range syncKills {
		time.Sleep(200*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond)))) // load runs meanwhile
		a.kill()
		t.Logf("kill %d", k+1)
		a.start()
	}
	time.Sleep(200 * time.Millisecond) // load on the last process too
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(acked) < syncKills {
		t.Fatalf("only %d tasks acknowledged: the load did not run", len(acked))
	}
	t.Logf("%d tasks answered 200 completed", len(acked))

	hc := newClient(durClients, requestTimeout)
	defer hc.CloseIdleConnections()
	ids := make([]string, len(acked))
	for i, d := range acked {
		ids[i] = d.id
	}
	views := fetchTasks(t, a, hc, ids)
	for _, d := range acked {
		v := views[d.id]
		if v.Status != "completed" || payloadN(t, v) != d.n {
			t.Errorf("task %s: %s with payload %s, want completed with n=%d", d.id, v.Status, v.Payload, d.n)
		}
	}
	// The event streams of a sample (every task's would take long).
	for i := 0; i < len(acked); i += max(1, len(acked)/50) {
		id := acked[i].id
		evs := a.events(id, 10*time.Second, func(e sseEvent) bool { return e.typ == "complete" })
		want := []string{"status_update", "status_update", "status_update", "status_update", "complete"}
		if len(evs) != len(want) {
			t.Errorf("task %s: %d events %v, want %v", id, len(evs), evs, want)
			continue
		}
		for j, e := range evs {
			if e.typ != want[j] || e.id != strconv.Itoa(j+1) {
				t.Errorf("task %s: event %d is %s id %s, want %s id %d", id, j, e.typ, e.id, want[j], j+1)
			}
		}
	}

	a.stop()
	code, out, errOut := runCLI(t, 30*time.Second, "db", "check", "--offline", "--data", a.dataDir, "--json")
	if code != 0 {
		t.Fatalf("synapse db check: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var rep struct {
		OK            bool `json:"ok"`
		SchemaVersion int  `json:"schema_version"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.OK || rep.SchemaVersion < 6 {
		t.Errorf("db check: %s (%v), want ok with schema_version 6 or later", out, err)
	}
}
