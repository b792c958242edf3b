package agent_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// closeNow closes a without giving running tasks any time: they are left
// executing in the store, as after a crash.
func closeNow(t *testing.T, a *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// leaveExecuting runs a task of the blocking handler taskType and closes the
// agent while it runs; it returns the task id.
func leaveExecuting(t *testing.T, cfg agent.Config, taskType string, idempotent bool) string {
	t.Helper()
	started := make(chan string, 1)
	a := openAgent(t, cfg, newFakeClock(), blockHandler(taskType, idempotent, started))
	task := submit(t, a, taskType, `{"n":1}`)
	<-started
	waitStatus(t, a, task.ID, wire.StatusExecuting)
	closeNow(t, a)
	return task.ID
}

func TestRestartFailsInterruptedTask(t *testing.T) {
	cfg := testConfig(t)
	id := leaveExecuting(t, cfg, "block", false)

	ran := make(chan string, 1)
	a := openAgent(t, cfg, newFakeClock(), blockHandler("block", false, ran))
	got, err := a.Task(id)
	if err != nil {
		t.Fatalf("Task: %v", err)
	}
	if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeAgentRestarted || !got.Recoverable {
		t.Fatalf("after restart: %s %s recoverable=%v, want failed agent_restarted recoverable", got.Status, got.ErrorCode, got.Recoverable)
	}
	last := got.History[len(got.History)-1]
	if last.From != wire.StatusExecuting || last.Status != wire.StatusFailed {
		t.Errorf("last transition %s → %s, want executing → failed", last.From, last.Status)
	}
	select {
	case <-ran:
		t.Error("the non-idempotent handler ran again after the restart")
	default:
	}
	evs := eventsOf(t, a, id)
	if evs[len(evs)-1].Type != wire.EventComplete || evs[len(evs)-1].Seq != got.Seq {
		t.Errorf("the stream of the failed task does not end with complete at seq %d", got.Seq)
	}
}

func TestRestartRerunsIdempotentTask(t *testing.T) {
	cfg := testConfig(t)
	id := leaveExecuting(t, cfg, "redo", true)

	var runs atomic.Int32
	a := openAgent(t, cfg, newFakeClock(), agent.Handler{
		Type:       wire.SupportedTaskType{Type: "redo"},
		Idempotent: true,
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			runs.Add(1)
			return map[string]string{"payload": string(r.Payload())}, nil
		},
	})
	got := waitFinal(t, a, id)
	if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"payload":"{\"n\":1}"}`)) {
		t.Fatalf("after restart: %s %s %q, want completed with the original payload", got.Status, got.Result, got.ErrorMessage)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times after the restart, want 1", n)
	}
	logged := false
	for _, e := range eventsOf(t, a, id) {
		if e.Type == wire.EventLog && strings.Contains(eventData(t, e)["line"].(string), "restarted") {
			logged = true
		}
	}
	if !logged {
		t.Error("no log event says the task was run again after the restart")
	}
}

// writeTask stores a task directly, as a previous process would have left it.
func writeTask(t *testing.T, db *store.DB, now time.Time, typ string, path []wire.Status, payload string) string {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	task := &wire.Task{ID: id.String(), Type: typ, Payload: wire.JSONValue(payload), Status: wire.StatusIdle, CreatedAt: now, UpdatedAt: now}
	for _, s := range path {
		task.History = append(task.History, wire.Transition{From: task.Status, Status: s, At: wire.Time{Time: now}})
		task.Status = s
	}
	if task.Status == wire.StatusInfoNeeded {
		task.MissingFields = []wire.MissingField{{Field: "ms", Reason: "required"}}
	}
	if err := db.Update(context.Background(), func(tx *store.Tx) error { return tx.CreateTask(task) }); err != nil {
		t.Fatalf("write task: %v", err)
	}
	return task.ID
}

func TestRestartTakesOverQueuedTasks(t *testing.T) {
	cfg := testConfig(t)
	clock := newFakeClock()
	// Initialise the data directory, then write what a crashed process
	// could have left behind.
	closeAgent(t, openAgent(t, cfg, nil), time.Second)
	db, err := store.Open(context.Background(), filepath.Join(cfg.DataDir, store.FileName), store.Options{})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	confirmed := writeTask(t, db, clock.Now(), "echo", []wire.Status{wire.StatusPending, wire.StatusConfirmed}, `{"q":"confirmed"}`)
	pending := writeTask(t, db, clock.Now(), "echo", []wire.Status{wire.StatusPending}, `{"q":"pending"}`)
	parked := writeTask(t, db, clock.Now(), "sleep", []wire.Status{wire.StatusPending, wire.StatusInfoNeeded}, `{}`)
	orphan := writeTask(t, db, clock.Now(), "vanished", []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting}, `{}`)
	done := writeTask(t, db, clock.Now(), "echo", []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}, `{}`)
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	cfg.MaxConcurrentTasks = 1 // taken-over tasks run even beyond the limit
	a := openAgent(t, cfg, clock)
	for _, tc := range []struct {
		name, id, payload string
		history           []wire.Status
	}{
		{"confirmed", confirmed, `{"q":"confirmed"}`, []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}},
		{"pending", pending, `{"q":"pending"}`, []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := waitFinal(t, a, tc.id)
			if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(tc.payload)) {
				t.Errorf("%s task after restart: %s %s, want completed %s", tc.name, got.Status, got.Result, tc.payload)
			}
			if s := statuses(got); !slices.Equal(s, tc.history) {
				t.Errorf("history %v, want %v", s, tc.history)
			}
		})
	}
	t.Run("waiting for info", func(t *testing.T) {
		got, err := a.Task(parked)
		if err != nil || got.Status != wire.StatusInfoNeeded {
			t.Fatalf("parked task after restart: %v %v, want info_needed", got, err)
		}
		if _, err := a.ProvideInfo(context.Background(), parked, wire.JSONValue(`{"ms":1}`)); err != nil {
			t.Fatalf("ProvideInfo after restart: %v", err)
		}
		if got := waitFinal(t, a, parked); got.Status != wire.StatusCompleted {
			t.Errorf("parked task after info: %s", got.Status)
		}
	})
	t.Run("handler gone", func(t *testing.T) {
		got := waitFinal(t, a, orphan)
		if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeCapabilityLacking {
			t.Errorf("task of an unregistered type after restart: %s %s, want failed capability_lacking", got.Status, got.ErrorCode)
		}
	})
	t.Run("finished untouched", func(t *testing.T) {
		got, err := a.Task(done)
		if err != nil || got.Status != wire.StatusCompleted || len(got.History) != 4 {
			t.Errorf("finished task after restart: %+v %v", got, err)
		}
	})
}

func TestCloseIsIdempotentAndRefusesWork(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	closeAgent(t, a, time.Second)
	closeAgent(t, a, time.Second)
	select {
	case <-a.Done():
	default:
		t.Error("Done() is not closed after Close")
	}
	_, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo"}, agent.SubmitOptions{})
	wantCode(t, err, wire.CodeAgentNotReady)
}
