package agent_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/wire"
)

// Finished tasks live only in the store: after many tasks the heap is back
// near where it started.
func TestFinishedTasksLeaveMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("submits 20,000 tasks")
	}
	const (
		workers = 32
		bound   = 32 << 20 // total heap
		perTask = 256      // heap growth per finished task
	)
	tasks := 20_000
	if raceEnabled {
		tasks = 5_000
	}
	cfg := testConfig(t)
	cfg.MaxConcurrentTasks = workers
	a := openAgent(t, cfg, newFakeClock())
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()

	var wg sync.WaitGroup
	jobs := make(chan int)
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				payload := wire.JSONValue(`{"i":` + strconv.Itoa(i) + `,"pad":"................................................................"}`)
				task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo", Payload: payload}, agent.SubmitOptions{})
				if err == nil {
					task.Task, err = a.Wait(context.Background(), task.ID, 10*time.Second)
				}
				if err == nil && task.Status != wire.StatusCompleted {
					err = fmt.Errorf("task %s is %s", task.ID, task.Status)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	start := time.Now()
feed:
	for i := range tasks {
		select {
		case jobs <- i:
		case err := <-errs:
			t.Errorf("task %d: %v", i, err)
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	// What the commit log holds past the last checkpoint is also in
	// memory (the store's read layer), bounded by the checkpoint limits
	// and given back by the next checkpoint, which a slow machine may not
	// have reached yet: a backup checkpoints first, so the heap is read
	// with nothing of the tasks left there.
	held := heap()
	if _, err := a.Store().Backup(io.Discard, nil); err != nil {
		t.Fatalf("Backup: %v", err)
	}
	after := heap()
	t.Logf("%d echo tasks in %v (%.0f/s); heap %d KiB before, %d KiB after (%d KiB before the checkpoint)",
		tasks, elapsed, float64(tasks)/elapsed.Seconds(), before>>10, after>>10, held>>10)
	if after > bound {
		t.Errorf("heap after %d finished tasks = %d MiB, want < %d MiB", tasks, after>>20, bound>>20)
	}
	if after > before && (after-before)/uint64(tasks) > perTask {
		t.Errorf("heap grew by %d B per finished task, want < %d: finished tasks stay in memory", (after-before)/uint64(tasks), perTask)
	}
	if got := metric(t, a, "synapse_tasks_active"); got != 0 {
		t.Errorf("synapse_tasks_active = %v after every task finished", got)
	}
}

// benchAgent opens an agent with the built-in handlers on a fresh store
// for a benchmark; mutate (may be nil) adjusts the config first.
func benchAgent(b *testing.B, mutate func(*agent.Config)) *agent.Agent {
	b.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = b.TempDir()
	cfg.AdminToken = "t"
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := agent.New(cfg, agent.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		b.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close(context.Background()) })
	return a
}

func BenchmarkSubmitEcho(b *testing.B) {
	a := benchAgent(b, nil)
	req := func() *wire.SubmitRequest {
		return &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{"msg":"hello"}`)}
	}
	ctx := context.Background()
	b.ReportAllocs()
	st := a.Store().Stats()
	commits, writes, pages, bytes := st.Commits.Load(), st.Writes.Load(), st.Pages.Load(), st.BytesWritten()
	for b.Loop() {
		task, err := a.Submit(ctx, admin, req(), agent.SubmitOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if task.Task, err = a.Wait(ctx, task.ID, 10*time.Second); err != nil || task.Status != wire.StatusCompleted {
			b.Fatalf("Wait: %v %v", task, err)
		}
	}
	b.ReportMetric(float64(st.Commits.Load()-commits)/float64(b.N), "commits/op")
	b.ReportMetric(float64(st.Writes.Load()-writes)/float64(b.N), "writes/op")
	b.ReportMetric(float64(st.Pages.Load()-pages)/float64(b.N), "pages/op")
	b.ReportMetric(float64(st.BytesWritten()-bytes)/float64(b.N), "storeB/op")
}

// BenchmarkSubmitWaitEcho is the sync mode (POST /task?wait=, A2A's
// blocking send) in process: the echo runs inline and its task is stored
// once, final (one commit per echo).
func BenchmarkSubmitWaitEcho(b *testing.B) {
	a := benchAgent(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	st := a.Store().Stats()
	commits, pages, bytes := st.Commits.Load(), st.Pages.Load(), st.BytesWritten()
	for b.Loop() {
		req := &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{"msg":"hello"}`)}
		task, err := a.Submit(ctx, admin, req, agent.SubmitOptions{Wait: 10 * time.Second})
		if err != nil || task.Status != wire.StatusCompleted {
			b.Fatalf("SubmitWait: %v %v", task, err)
		}
	}
	b.ReportMetric(float64(st.Commits.Load()-commits)/float64(b.N), "commits/op")
	b.ReportMetric(float64(st.Pages.Load()-pages)/float64(b.N), "pages/op")
	b.ReportMetric(float64(st.BytesWritten()-bytes)/float64(b.N), "storeB/op")
}
