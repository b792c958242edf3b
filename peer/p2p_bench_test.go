package peer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/wire"
)

// Benchmarks of delegation between two agents over loopback HTTP:
//
//	go test -run '^$' -bench 'Delegation' ./agent
//	go test -run '^$' -bench 'OutboxDrain' -benchtime 10000x ./agent

// roomy lets the executor run many tasks at once (the benchmarks measure
// the protocol, not admission).
func roomy(c *agent.Config) { c.MaxConcurrentTasks = 100_000 }

// BenchmarkDelegationRoundTrip submits echo tasks with a target to the
// requester over HTTP with ?wait=30 and waits for the executor's result:
// task_request, task_confirm, status updates, task_complete and task_ack
// each cross the loopback once.
func BenchmarkDelegationRoundTrip(b *testing.B) {
	for _, c := range []int{1, 16} {
		b.Run("c="+strconv.Itoa(c), func(b *testing.B) {
			req := startPeer(b, "requester", roomy)
			exe := startPeer(b, "executor", roomy)
			pair(b, req, exe)
			body := []byte(`{"task_type":"echo","payload":{"n":1},"target":"` + exe.id() + `"}`)
			hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: c}}
			defer hc.CloseIdleConnections()
			var failed atomic.Int64
			var next atomic.Int64
			batches0 := counter(req.a, "synapse_outbox_batches_total") + counter(exe.a, "synapse_outbox_batches_total")
			sent0 := counter(req.a, "synapse_outbox_delivered_total") + counter(exe.a, "synapse_outbox_delivered_total")
			reqSyncs0, exeSyncs0 := counter(req.a, "synapse_store_fsyncs_total"), counter(exe.a, "synapse_store_fsyncs_total")
			reqWrites0, exeWrites0 := counter(req.a, "synapse_store_writes_total"), counter(exe.a, "synapse_store_writes_total")
			b.ResetTimer()
			var wg sync.WaitGroup
			for range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if !roundTrip(hc, req.url(), body) {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d delegations did not complete", n, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
			// Requests between the agents (batches; single messages are
			// not counted) and messages delivered per batch, both ways.
			batches := counter(req.a, "synapse_outbox_batches_total") + counter(exe.a, "synapse_outbox_batches_total") - batches0
			sent := counter(req.a, "synapse_outbox_delivered_total") + counter(exe.a, "synapse_outbox_delivered_total") - sent0
			b.ReportMetric(batches/b.Elapsed().Seconds(), "batches/s")
			// What each delegation costs each agent's disk: its fsyncs and
			// its writes (acknowledged writes, several per fsync when they
			// group).
			n := float64(b.N)
			b.ReportMetric((counter(req.a, "synapse_store_fsyncs_total")-reqSyncs0)/n, "reqfsyncs/op")
			b.ReportMetric((counter(exe.a, "synapse_store_fsyncs_total")-exeSyncs0)/n, "exefsyncs/op")
			b.ReportMetric((counter(req.a, "synapse_store_writes_total")-reqWrites0)/n, "reqwrites/op")
			b.ReportMetric((counter(exe.a, "synapse_store_writes_total")-exeWrites0)/n, "exewrites/op")
			if batches > 0 {
				b.ReportMetric(sent/batches, "msgs/batch")
			}
		})
	}
}

// roundTrip submits one delegated task and reports whether it completed.
func roundTrip(hc *http.Client, base string, body []byte) bool {
	r, err := http.NewRequest(http.MethodPost, base+"/api/v1/synapse/task?wait=30", bytes.NewReader(body))
	if err != nil {
		return false
	}
	r.Header.Set("Authorization", "Bearer "+peerToken)
	r.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(r)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var v struct {
		Status string `json:"status"`
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && json.Unmarshal(b, &v) == nil && v.Status == "completed"
}

// BenchmarkOutboxDrain queues b.N delegated tasks for a stopped executor
// and measures, from the moment it starts again, how fast the requester's
// outbox empties and every task completes. msgs/s counts every message the
// requester's outbox delivered (requests and acknowledgements).
func BenchmarkOutboxDrain(b *testing.B) {
	req := startPeer(b, "requester", roomy)
	exe := startPeer(b, "executor", roomy)
	pair(b, req, exe)
	exe.stop()
	ctx := context.Background()
	ids := make([]string, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 { // concurrent submits share commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				t, err := req.a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), Target: exe.id()}, agent.SubmitOptions{})
				if err != nil {
					b.Errorf("Submit: %v", err)
					return
				}
				ids[i] = t.ID
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}
	if got := len(outboxOf(b, req.a, outbox.Pending)); got != b.N {
		b.Fatalf("%d messages queued, want %d", got, b.N)
	}
	delivered0 := counter(req.a, "synapse_outbox_delivered_total")
	w0, c0 := counter(exe.a, "synapse_store_writes_total"), counter(exe.a, "synapse_store_commits_total")
	busyE0, busyR0 := counter(exe.a, "synapse_store_commit_seconds_total"), counter(req.a, "synapse_store_commit_seconds_total")
	cR0 := counter(req.a, "synapse_store_commits_total")
	b.ResetTimer()
	exe.open()
	deadline := time.Now().Add(10 * time.Minute)
	for _, id := range ids {
		for {
			t, err := req.a.Wait(ctx, id, time.Second)
			if err == nil && t.Status.Terminal() {
				if t.Status != wire.StatusCompleted {
					b.Fatalf("task %s is %s (%s)", id, t.Status, t.ErrorMessage)
				}
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("task %s not done after 10 minutes", id)
			}
		}
	}
	for counter(req.a, "synapse_outbox_pending") > 0 {
		if time.Now().After(deadline) {
			b.Fatal("outbox not empty after 10 minutes")
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	b.StopTimer()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/secs, "tasks/s")
	b.ReportMetric((counter(req.a, "synapse_outbox_delivered_total")-delivered0)/secs, "msgs/s")
	// The executor's group-commit factor and commit rate during the drain.
	w, c := counter(exe.a, "synapse_store_writes_total")-w0, counter(exe.a, "synapse_store_commits_total")-c0
	if c > 0 {
		b.ReportMetric(w/c, "exe-writes/commit")
		b.ReportMetric(c/secs, "exe-commits/s")
	}
	// How busy each store's writer was (commit time over elapsed time):
	// near 1 means the writer bounds the drain.
	b.ReportMetric((counter(exe.a, "synapse_store_commit_seconds_total")-busyE0)/secs, "exe-writer-busy")
	b.ReportMetric((counter(req.a, "synapse_store_commit_seconds_total")-busyR0)/secs, "req-writer-busy")
	b.ReportMetric((counter(req.a, "synapse_store_commits_total")-cR0)/secs, "req-commits/s")
}

// counter reads one series of the agent's metrics (0 when absent).
func counter(a *node, series string) float64 {
	var buf bytes.Buffer
	a.Metrics().Write(&buf)
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, _ := strconv.ParseFloat(value, 64)
			return v
		}
	}
	return 0
}
