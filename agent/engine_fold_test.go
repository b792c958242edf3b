package agent_test

import (
	"context"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// A fast idempotent handler's executing state is written with its final
// state: the submit and the end are the task's only two commits, and the
// history and events are those of a task started on its own.
func TestFoldedStart(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	// The store's write counter counts the agent's other writes too (its
	// start-up work): they only add, so one of a few tasks must show 2.
	st := a.Store().Stats()
	var done *wire.Task
	least := uint64(1 << 62)
	for i := 0; i < 5 && least > 2; i++ {
		before := st.Writes.Load()
		task := submit(t, a, "echo", `{"msg":"hi"}`)
		done = waitFinal(t, a, task.ID)
		least = min(least, st.Writes.Load()-before)
		if done.Status != wire.StatusCompleted || string(done.Result) != `{"msg":"hi"}` {
			t.Fatalf("got %s", describe(done))
		}
	}
	if least != 2 {
		t.Errorf("an echo took at least %d writes, want 2 (submit, then executing and completed in one)", least)
	}
	task := done
	want := []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}
	if got := statuses(done); !slices.Equal(got, want) {
		t.Errorf("history %v, want %v", got, want)
	}
	if done.StartedAt.IsZero() {
		t.Error("started_at is not set")
	}
	evs := eventsOf(t, a, task.ID)
	var types []wire.EventType
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		types = append(types, e.Type)
	}
	wantTypes := []wire.EventType{wire.EventStatus, wire.EventStatus, wire.EventStatus, wire.EventStatus, wire.EventComplete}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("events %v, want %v", types, wantTypes)
	}
	if done.Seq != uint64(len(evs)) {
		t.Errorf("task seq %d, %d events", done.Seq, len(evs))
	}
}

// A handler still running after the budget is stored as executing while it
// runs, with the progress it reported before.
func TestFoldedStartLate(t *testing.T) {
	release := make(chan struct{})
	h := agent.Handler{
		Type:       wire.SupportedTaskType{Type: "slow", Name: "Slow"},
		Idempotent: true,
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			r.Progress(30, "early")
			select {
			case <-release:
				return map[string]bool{"ok": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
	a := openAgent(t, testConfig(t), newFakeClock(), h)
	task := submit(t, a, "slow", `{}`)
	running := waitStatus(t, a, task.ID, wire.StatusExecuting)
	if running.Progress != 30 {
		t.Errorf("stored executing with progress %d, want 30 (reported before the budget)", running.Progress)
	}
	close(release)
	done := waitFinal(t, a, task.ID)
	want := []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}
	if got := statuses(done); done.Status != wire.StatusCompleted || !slices.Equal(got, want) {
		t.Errorf("got %s, history %v", describe(done), got)
	}
	var progress int
	for _, e := range eventsOf(t, a, task.ID) {
		if e.Type == wire.EventProgress {
			progress++
		}
	}
	if progress != 1 {
		t.Errorf("%d progress events, want 1", progress)
	}
}

// A cancel of a folded run ends it cancelled, with executing in its
// history.
func TestFoldedStartCancel(t *testing.T) {
	started := make(chan string, 1)
	a := openAgent(t, testConfig(t), newFakeClock(), blockHandler("block", true, started))
	task := submit(t, a, "block", `{}`)
	<-started
	got, err := a.Cancel(context.Background(), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	done := waitFinal(t, a, got.ID)
	if done.Status != wire.StatusCancelled || !slices.Contains(statuses(done), wire.StatusExecuting) {
		t.Errorf("got %s, history %v", describe(done), statuses(done))
	}
}
