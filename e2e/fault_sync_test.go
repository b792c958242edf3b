//go:build linux

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

// The bounds of the intermittent sync fault test.
const (
	faultFor        = 3 * time.Second  // how long the syncs fail
	faultLoadAfter  = time.Second      // load after the fault cleared
	faultLoadLimit  = 30 * time.Second // the whole load phase at most
	faultPerClient  = 400              // submissions of one client at most
	faultBatchLimit = 300              // tier-1 batches at most
	faultPerBatch   = 20               // frames of a tier-1 batch
	faultFinalLimit = time.Minute      // for every task to be final
	faultRetryEvery = 20 * time.Millisecond
	faultHealthy    = 2 * time.Second // /health SERVING after the fault cleared
	faultSyncInject = syncCalls + ":error=EIO:when=2+2"
	faultExpiring   = 4 // sleep tasks whose ttl passes during the fault
)

// faultLedger is what the clients of a fault run were told, by payload
// number (task) or batch number (tier-1).
type faultLedger struct {
	mu       sync.Mutex
	acked    map[int]string // 201 (or 200 completed): n → task id
	keyed    map[int]bool   // acked through an idempotency key
	unknown  map[int]bool   // unkeyed, answered commit_outcome_unknown: stored once or not
	refused  map[int]string // answered a refusal: must not be stored
	results  map[int]string // ?wait= answered completed: n → result_json
	batches  map[int]bool   // tier-1 batch acknowledged
	dropped  map[int]string // tier-1 batch refused: none of its frames stored
	sawUnkn  int            // commit_outcome_unknown answers
	attempts int
}

func newFaultLedger() *faultLedger {
	return &faultLedger{acked: map[int]string{}, keyed: map[int]bool{}, unknown: map[int]bool{}, refused: map[int]string{},
		results: map[int]string{}, batches: map[int]bool{}, dropped: map[int]string{}}
}

func (l *faultLedger) note(f func(l *faultLedger)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(l)
}

// unknownOutcome reports whether r is the answer to a commit whose
// outcome is unknown: 503 commit_outcome_unknown with a Retry-After.
func unknownOutcome(t *testing.T, r response) bool {
	if errorCode(r) != wire.CodeCommitUnknown {
		return false
	}
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("commit_outcome_unknown answered %d, Retry-After %q: want 503 with a Retry-After", r.status, r.header.Get("Retry-After"))
	}
	return true
}

// retriable reports whether r asks the client to come again without
// saying anything about the request (busy, or the key's first request
// still in flight).
func retriable(r response) bool {
	return r.status == http.StatusTooManyRequests || r.status == http.StatusConflict
}

// refusedNow reports whether r refuses the request with nothing of it
// stored (500 TP-SYS002: the store could not begin the commit, its log
// not reopened while the disk fails). For a keyed retry or a resent
// tier-1 batch it says nothing of an earlier attempt answered
// commit_outcome_unknown, so such clients retry with the key.
func refusedNow(r response) bool {
	return r.status == http.StatusInternalServerError && tpCode(string(r.body)) == "TP-SYS002"
}

// faultLoad runs the clients of a fault run against a until stop is
// closed: keyed REST submissions (each retried with its key until 201),
// unkeyed ones (every third with ?wait=), and tier-1 batches (each resent
// with its batch id until acknowledged).
func faultLoad(t *testing.T, a *agentProc, l *faultLedger, stop <-chan struct{}) {
	deadline := time.Now().Add(faultLoadLimit)
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return time.Now().After(deadline)
		}
	}
	post := func(hc *http.Client, path string, body []byte, header ...string) (response, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), durRequestLimit)
		defer cancel()
		r, err := a.send(ctx, hc, http.MethodPost, path, body, header...)
		l.note(func(l *faultLedger) { l.attempts++ })
		if err != nil {
			t.Errorf("POST %s: %v", path, err)
			return r, false
		}
		return r, true
	}
	var wg sync.WaitGroup
	for c := range 2 { // keyed
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc := newClient(1, durRequestLimit)
			defer hc.CloseIdleConnections()
			for i := 0; i < faultPerClient && !stopped(); i++ {
				n := (c+1)*100_000 + i
				key, body := fmt.Sprintf("fault-%d", n), fmt.Sprintf(`{"task_type":"echo","payload":{"n":%d}}`, n)
				for { // until acknowledged: the load's end does not abandon a key
					r, ok := post(hc, prefix+"/task", []byte(body), "Idempotency-Key", key)
					if !ok {
						return
					}
					if unknownOutcome(t, r) || retriable(r) || refusedNow(r) {
						l.note(func(l *faultLedger) { l.sawUnkn += b2i(r.status == http.StatusServiceUnavailable) })
						if time.Now().After(deadline) {
							t.Errorf("key %s: not acknowledged before the deadline: %s", key, r)
							return
						}
						time.Sleep(faultRetryEvery) // retry pacing
						continue
					}
					id := taskIDOf(r)
					l.note(func(l *faultLedger) {
						if r.status == http.StatusCreated && id != "" {
							l.acked[n], l.keyed[n] = id, true
						} else {
							l.refused[n] = r.String()
						}
					})
					break
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // unkeyed, every third waiting for the result
		defer wg.Done()
		hc := newClient(1, durRequestLimit+10*time.Second)
		defer hc.CloseIdleConnections()
		for i := 0; i < faultPerClient && !stopped(); i++ {
			n := 300_000 + i
			path, want := prefix+"/task", http.StatusCreated
			if i%3 == 0 {
				path, want = prefix+"/task?wait=10", http.StatusOK
			}
			r, ok := post(hc, path, fmt.Appendf(nil, `{"task_type":"echo","payload":{"n":%d}}`, n))
			if !ok {
				return
			}
			if retriable(r) {
				time.Sleep(faultRetryEvery) // busy: pace the next submission
			}
			l.note(func(l *faultLedger) {
				switch {
				case unknownOutcome(t, r):
					l.unknown[n] = true
					l.sawUnkn++
				case r.status == want && taskIDOf(r) != "":
					l.acked[n] = taskIDOf(r)
					if want == http.StatusOK {
						var v taskView
						if json.Unmarshal(r.body, &v) != nil || v.Status != "completed" {
							t.Errorf("POST %s n=%d: %s, want completed", path, n, r)
						}
						l.results[n] = v.ResultJSON
					}
				default:
					l.refused[n] = r.String()
				}
			})
		}
	}()
	wg.Add(1)
	go func() { // tier-1 batches
		defer wg.Done()
		hc := newClient(1, durRequestLimit)
		defer hc.CloseIdleConnections()
		for b := 0; b < faultBatchLimit && !stopped(); b++ {
			batch := t1Batch(fmt.Sprintf("fault-b-%d", b), "fault-dev", b*faultPerBatch, faultPerBatch)
			for {
				r, ok := post(hc, prefix+"/tier1/synapse.telemetry", batch, "Content-Type", wire.ContentMsgpack)
				if !ok {
					return
				}
				if r.status == http.StatusOK {
					l.note(func(l *faultLedger) { l.batches[b] = true })
					break
				}
				if unknownOutcome(t, r) || retriable(r) || refusedNow(r) {
					if time.Now().After(deadline) {
						t.Errorf("batch %d: not acknowledged before the deadline: %s", b, r)
						return
					}
					time.Sleep(faultRetryEvery) // resend pacing
					continue
				}
				l.note(func(l *faultLedger) { l.dropped[b] = r.String() })
				break
			}
		}
	}()
	wg.Wait()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// taskIDOf is the task_id of an answer, or "".
func taskIDOf(r response) string {
	var v struct {
		TaskID string `json:"task_id"`
	}
	_ = json.Unmarshal(r.body, &v)
	return v.TaskID
}

// checkFaultLedger checks what a holds against what its clients were
// told: every task final (completed: they are echo tasks) within
// faultFinalLimit; every acknowledged payload stored once, under the
// acknowledged id; no refused payload stored; an unknown one at most
// once; a ?wait= answer's result is the stored one; every acknowledged
// batch's frames stored once, and none of a refused batch.
func checkFaultLedger(t *testing.T, a *agentProc, l *faultLedger) {
	t.Helper()
	hc := newClient(durClients, requestTimeout)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(faultFinalLimit)
	for {
		by := a.summary(hc)
		live := 0
		for st, n := range by {
			if !(taskView{Status: st}).terminal() {
				live += n
			}
		}
		if by != nil && live == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks not final %s after the load: %v", faultFinalLimit, by)
		}
		time.Sleep(100 * time.Millisecond) // a summary reads every task: poll it slowly
	}
	views := fetchTasks(t, a, hc, a.listAll(hc))
	byN := map[int][]taskView{}
	for _, v := range views {
		if v.TaskType == "sleep" {
			continue // the deadline tasks: checkExpired
		}
		if v.Status != "completed" {
			t.Errorf("task %s is %s (%s), want completed", v.TaskID, v.Status, v.ErrorCode)
		}
		n := payloadN(t, v)
		byN[n] = append(byN[n], v)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for n, id := range l.acked {
		if vs := byN[n]; len(vs) != 1 || vs[0].TaskID != id {
			t.Errorf("acknowledged payload %d (task %s): stored %d times %v, want once", n, id, len(vs), vs)
		}
	}
	for n, answer := range l.refused {
		if vs := byN[n]; len(vs) != 0 {
			t.Errorf("payload %d answered %s is stored: %v", n, answer, vs)
		}
	}
	phantom := 0
	for n := range l.unknown {
		phantom += len(byN[n])
		if len(byN[n]) > 1 {
			t.Errorf("payload %d of an unknown outcome stored %d times", n, len(byN[n]))
		}
	}
	for n, res := range l.results {
		if vs := byN[n]; len(vs) == 1 && (res == "" || vs[0].ResultJSON != res) {
			t.Errorf("payload %d answered completed with %q; stored %q", n, res, vs[0].ResultJSON)
		}
	}
	for n := range byN {
		if _, ok := l.acked[n]; !ok && !l.unknown[n] {
			t.Errorf("payload %d stored, never acknowledged nor of unknown outcome: %v", n, byN[n])
		}
	}
	seqs := map[int]int{}
	for _, s := range storedSeqs(t, a, "fault-dev") {
		seqs[s]++
	}
	for b := range l.batches {
		for s := b * faultPerBatch; s < (b+1)*faultPerBatch; s++ {
			if seqs[s] != 1 {
				t.Errorf("frame %d of acknowledged batch %d stored %d times, want once", s, b, seqs[s])
			}
		}
	}
	for b, answer := range l.dropped {
		for s := b * faultPerBatch; s < (b+1)*faultPerBatch; s++ {
			if seqs[s] != 0 {
				t.Errorf("frame %d of batch %d answered %s is stored", s, b, answer)
			}
		}
	}
	for n, answer := range l.refused {
		t.Logf("for example, payload %d was refused: %s", n, answer)
		break
	}
	t.Logf("%d submissions: %d acknowledged (%d keyed), %d commit_outcome_unknown answers (%d unkeyed, %d of them stored), %d refused; %d tier-1 batches acknowledged, %d refused",
		l.attempts, len(l.acked), len(l.keyed), l.sawUnkn, len(l.unknown), phantom, len(l.refused), len(l.batches), len(l.dropped))
}

// TestFaultSyncEIOUnderLoad (issue #28, items 1–4 and 6): while clients
// submit tasks (with and without idempotency keys, some waiting for the
// result) and tier-1 batches, every other fdatasync and fsync of the
// agent fails with EIO for 3 s. Afterwards no refused write is stored
// (a commit_outcome_unknown one at most once, and a keyed retry finds
// it); every acknowledged one is stored once, before and after kill -9
// and a restart; no task is left non-final; db check is clean, live and
// offline; /health reads SERVING within 2 s of the fault clearing.
func TestFaultSyncEIOUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("disk fault test: skipped with -short")
	}
	straceBin(t)
	a := startAgent(t, agentOpts{env: []string{"SYNAPSE_MAX_CONCURRENT_TASKS=64"}})
	l := newFaultLedger()
	stop := make(chan struct{})
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		faultLoad(t, a, l, stop)
	}()
	testutil.Eventually(t, 20*time.Second, "acknowledgements before the fault", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acked) >= 20 && len(l.batches) >= 5
	})
	// Tasks whose deadline (ttl_seconds) passes while the syncs fail: the
	// write of their failure may fail, and must be made all the same.
	var expiring []string
	for i := range faultExpiring {
		_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":600000},"ttl_seconds":2}`,
			"Idempotency-Key", fmt.Sprintf("fault-expiring-%d", i))
		expiring = append(expiring, id)
	}
	f := injectFault(t, a.pid(), faultSyncInject)
	time.Sleep(faultFor) // the fault's length: the load runs meanwhile
	f.clear()
	healthServingWithin(t, a, faultHealthy)
	time.Sleep(faultLoadAfter) // load on the healthy agent too
	close(stop)
	<-loaded
	if t.Failed() {
		t.FailNow()
	}
	if l.sawUnkn == 0 {
		t.Fatal("no commit_outcome_unknown answer: the fault did not reach a commit")
	}
	checkFaultLedger(t, a, l)
	checkExpired(t, a, expiring)
	dbCheckClean(t, a, true)
	a.kill()
	a.start()
	checkFaultLedger(t, a, l)
	checkExpired(t, a, expiring)
	a.stop()
	dbCheckClean(t, a, false)
}

// checkExpired fails the test unless every task of ids is failed with
// task_expired: its deadline passed while the syncs failed, and the
// failure was stored nonetheless (checkFaultLedger has waited until no
// task is live).
func checkExpired(t *testing.T, a *agentProc, ids []string) {
	t.Helper()
	for _, id := range ids {
		if v := a.task(id); v.Status != "failed" || v.ErrorCode != string(wire.CodeTaskExpired) {
			t.Errorf("task %s, whose ttl passed during the fault: %s (%s), want failed task_expired", id, v.Status, v.ErrorCode)
		}
	}
}
