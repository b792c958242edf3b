//go:build linux

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// The bounds of the P2P sync fault test.
const (
	faultP2PTasks   = 500 // delegations from A to B
	faultP2PClients = 4   // keyed submitters; every fifth task waits
	faultP2PLimit   = 3 * time.Minute
)

// TestFaultP2PSyncEIO (issue #28, what it must show 2): A delegates 500
// echo tasks to B while every other fdatasync and fsync of A fails with
// EIO for 3 s (strace on A's process). Clients submit with idempotency
// keys and retry on 503; every fifth waits for the result (?wait=).
// Afterwards every task is completed once on A with B's result, before
// and after kill -9 and a restart of A; no client was told completed
// without that result stored; both outboxes drain; db check is clean on
// both; A's /health reads SERVING within 2 s of the fault clearing.
func TestFaultP2PSyncEIO(t *testing.T) {
	if testing.Short() {
		t.Skip("disk fault test: skipped with -short")
	}
	straceBin(t)
	a, b, _, bID := startKillPair(t)
	ids := make([]string, faultP2PTasks)
	told := make([]string, faultP2PTasks) // result_json a ?wait= answer gave, "" if none
	var (
		next, acked, unknown atomic.Int64
		wg                   sync.WaitGroup
	)
	deadline := time.Now().Add(faultP2PLimit)
	errs := make(chan error, faultP2PClients)
	for range faultP2PClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := newClient(1, durRequestLimit+30*time.Second)
			defer hc.CloseIdleConnections()
			for {
				i := int(next.Add(1)) - 1
				if i >= faultP2PTasks {
					return
				}
				path, want := prefix+"/task", http.StatusCreated
				if i%5 == 0 {
					path, want = prefix+"/task?wait=30", http.StatusOK
				}
				body := fmt.Sprintf(`{"task_type":"echo","payload":{"i":%d},"target":"%s"}`, i, bID)
				for { // until acknowledged, with the same key
					if time.Now().After(deadline) {
						errs <- fmt.Errorf("task %d not acknowledged before the deadline", i)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), durRequestLimit+30*time.Second)
					r, err := a.send(ctx, hc, http.MethodPost, path, []byte(body), "Idempotency-Key", "p2p-fault-"+strconv.Itoa(i))
					cancel()
					if err != nil {
						errs <- fmt.Errorf("task %d: %w", i, err)
						return
					}
					if r.status == http.StatusServiceUnavailable || retriable(r) || refusedNow(r) {
						if unknownOutcome(t, r) {
							unknown.Add(1)
						}
						time.Sleep(faultRetryEvery) // retry pacing
						continue
					}
					// A keyed retry of a ?wait= submission whose first try
					// was stored before it was final replays that answer,
					// 201 (Idempotent-Replayed).
					replay := r.status == http.StatusCreated && r.header.Get("Idempotent-Replayed") == "true"
					var v taskView
					if (r.status != want && !replay) || json.Unmarshal(r.body, &v) != nil || v.TaskID == "" {
						errs <- fmt.Errorf("POST %s task %d: %s, want %d", path, i, r, want)
						return
					}
					if r.status == http.StatusOK && v.Status == "completed" {
						if v.ResultJSON == "" {
							errs <- fmt.Errorf("task %d answered completed without a result: %s", i, r)
							return
						}
						told[i] = v.ResultJSON
					}
					ids[i] = v.TaskID
					acked.Add(1)
					break
				}
			}
		}()
	}
	testutil.Eventually(t, time.Minute, "100 delegations acknowledged before the fault", func() bool { return acked.Load() >= 100 })
	f := injectFault(t, a.pid(), faultSyncInject)
	time.Sleep(faultFor) // the fault's length: the delegations go on meanwhile
	f.clear()
	healthServingWithin(t, a, faultHealthy)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if unknown.Load() == 0 {
		t.Fatal("no commit_outcome_unknown answer: the fault did not reach a commit")
	}
	t.Logf("%d delegations acknowledged, %d commit_outcome_unknown answers on the way", acked.Load(), unknown.Load())

	hc := newClient(durClients, requestTimeout)
	defer hc.CloseIdleConnections()
	check := func(run string) {
		t.Helper()
		for end := time.Now().Add(2 * time.Minute); ; {
			by := a.summary(hc)
			if by["completed"]+by["failed"]+by["rejected"]+by["cancelled"] >= faultP2PTasks {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("%s: not every delegation final on A after 2m: %v on A, %v on B", run, by, b.summary(hc))
			}
			time.Sleep(200 * time.Millisecond) // a summary reads every task: poll it slowly
		}
		onA, onB := fetchTasks(t, a, hc, ids), fetchTasks(t, b, hc, ids)
		for i, id := range ids {
			va, vb := onA[id], onB[id]
			switch {
			case va.Status != "completed" || vb.Status != "completed":
				t.Errorf("%s: task %d (%s) is %s (%s) on A, %s on B; want completed on both", run, i, id, va.Status, va.ErrorCode, vb.Status)
			case va.ResultJSON == "" || va.ResultJSON != vb.ResultJSON:
				t.Errorf("%s: task %d (%s) has result %q on A, %q on B", run, i, id, va.ResultJSON, vb.ResultJSON)
			case told[i] != "" && told[i] != va.ResultJSON:
				t.Errorf("%s: task %d (%s) was answered completed with %q, A holds %q", run, i, id, told[i], va.ResultJSON)
			}
		}
		if n := len(a.listAll(hc)); n != faultP2PTasks {
			t.Errorf("%s: %d tasks on A, want %d", run, n, faultP2PTasks)
		}
		if n := len(b.listAll(hc)); n != faultP2PTasks {
			t.Errorf("%s: %d tasks on B, want %d (each run once)", run, n, faultP2PTasks)
		}
		for _, x := range []*agentProc{a, b} {
			testutil.Eventually(t, time.Minute, "the outbox drained", func() bool {
				return metricValue(t, x, "synapse_outbox_pending") == 0
			})
		}
	}
	check("after the fault")
	dbCheckClean(t, a, true)
	a.kill()
	a.start()
	check("after kill -9 and a restart of A")
	a.stop()
	b.stop()
	dbCheckClean(t, a, false)
	dbCheckClean(t, b, false)
}
