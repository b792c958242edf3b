package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/clocktest"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
	"github.com/synapse-edge/synapse/wire"
)

// fakeClock is the test clock: time moves only on Advance.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return tasktest.NewClock() }

// admin is the principal tests submit as.
var admin = tasktest.Admin

// testConfig is a valid configuration with its own data directory.
func testConfig(t *testing.T) agent.Config { return tasktest.Config(t) }

// openAgent builds and opens an agent with the given clock, the built-in
// handlers (package handlers) and extra ones; it is closed when the test
// ends (running tasks get 100 ms).
func openAgent(t *testing.T, cfg agent.Config, clock agent.Clock, hs ...agent.Handler) *agent.Agent {
	t.Helper()
	var opts agent.Options
	if clock != nil {
		opts.Clock = clock
	}
	a, err := agent.New(cfg, wiretest.Options(t, cfg, opts))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		t.Fatalf("handlers.Register: %v", err)
	}
	for _, h := range hs {
		if err := a.Handle(h); err != nil {
			t.Fatalf("Handle(%s): %v", h.Type.Type, err)
		}
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { closeAgent(t, a, 100*time.Millisecond) })
	return a
}

// closeAgent closes a, giving running tasks d to finish.
func closeAgent(t *testing.T, a *agent.Agent, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// submit submits a task and fails the test if it is refused.
func submit(t *testing.T, a *agent.Agent, taskType, payload string) *wire.Task {
	t.Helper()
	return tasktest.Submit(t, a, admin, taskType, payload)
}

// waitFinal waits until the task is in a final state.
func waitFinal(t *testing.T, a *agent.Agent, id string) *wire.Task {
	t.Helper()
	return tasktest.WaitFinal(t, a, id)
}

// waitStatus polls until the stored task is in status want.
func waitStatus(t *testing.T, a *agent.Agent, id string, want wire.Status) *wire.Task {
	t.Helper()
	return tasktest.WaitStatus(t, a, id, want)
}

func describe(task *wire.Task) string { return tasktest.Describe(task) }

// wantCode asserts err is a *wire.Error with code.
func wantCode(t *testing.T, err error, code wire.ErrorCode) *wire.Error {
	t.Helper()
	return tasktest.WantCode(t, err, code)
}

// statuses lists the states of a task's history.
func statuses(task *wire.Task) []wire.Status { return tasktest.Statuses(task) }

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	return tasktest.JSONEqual(t, got, want)
}

// eventsOf reads the stored events of a task.
func eventsOf(t *testing.T, a *agent.Agent, id string) []*wire.Event {
	t.Helper()
	return tasktest.EventsOf(t, a, id)
}

// eventData decodes an event's data object.
func eventData(t *testing.T, e *wire.Event) map[string]any {
	t.Helper()
	return tasktest.EventData(t, e)
}

// metric reads one sample of the agent's metrics by its exact series name.
func metric(t *testing.T, a *agent.Agent, series string) float64 {
	t.Helper()
	return tasktest.Metric(t, a, series)
}

// blockHandler runs until its context ends and then returns the context's
// error; started receives the task id when it begins.
func blockHandler(taskType string, idempotent bool, started chan<- string) agent.Handler {
	return tasktest.BlockHandler(taskType, idempotent, started)
}

// countStatus counts the transitions into s in a task's history.
func countStatus(task *wire.Task, s wire.Status) int {
	n := 0
	for _, h := range task.History {
		if h.Status == s {
			n++
		}
	}
	return n
}
