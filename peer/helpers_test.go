package peer_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/peer"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
	"github.com/synapse-edge/synapse/wire"
)

// node is an agent with its peer network: the agent's methods and the
// network's on one value, as the tests use them.
type node struct {
	*agent.Agent
	*peer.Network
}

// Open, Close and Prune are the agent's (which open, close and prune its
// network).
func (n *node) Open(ctx context.Context) error         { return n.Agent.Open(ctx) }
func (n *node) Close(ctx context.Context) error        { return n.Agent.Close(ctx) }
func (n *node) Prune(ctx context.Context) (int, error) { return n.Agent.Prune(ctx) }

// fakeClock is the test clock: time moves only on Advance.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return tasktest.NewClock() }

// admin is the principal tests submit as.
var admin = tasktest.Admin

// testConfig is a valid configuration with its own data directory.
func testConfig(t *testing.T) agent.Config { return tasktest.Config(t) }

// openAgent builds and opens an agent with the given clock, the built-in
// handlers and extra ones; it is closed when the test ends (running tasks
// get 100 ms).
func openAgent(t *testing.T, cfg agent.Config, clock agent.Clock, hs ...agent.Handler) *node {
	t.Helper()
	return openAgentWith(t, cfg, handlers.Config{}, clock, hs...)
}

// openAgentWith is openAgent with the handlers hc configures instead of
// the built-in ones.
func openAgentWith(t *testing.T, cfg agent.Config, hc handlers.Config, clock agent.Clock, hs ...agent.Handler) *node {
	t.Helper()
	var opts agent.Options
	if clock != nil {
		opts.Clock = clock
	}
	ag, err := agent.New(cfg, wiretest.Options(t, cfg, opts))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	nw, err := peer.New(ag, peer.Options{})
	if err != nil {
		t.Fatalf("peer.New: %v", err)
	}
	if err := handlers.Register(ag, handlers.Options{Config: hc}); err != nil {
		t.Fatalf("handlers.Register: %v", err)
	}
	a := &node{Agent: ag, Network: nw}
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
func closeAgent(t *testing.T, a *node, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// submit submits a task and fails the test if it is refused.
func submit(t *testing.T, a *node, taskType, payload string) *wire.Task {
	t.Helper()
	return tasktest.Submit(t, a.Agent, admin, taskType, payload)
}

// waitFinal waits until the task is in a final state.
func waitFinal(t *testing.T, a *node, id string) *wire.Task {
	t.Helper()
	return tasktest.WaitFinal(t, a.Agent, id)
}

// waitStatus polls until the stored task is in status want.
func waitStatus(t *testing.T, a *node, id string, want wire.Status) *wire.Task {
	t.Helper()
	return tasktest.WaitStatus(t, a.Agent, id, want)
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
func eventsOf(t *testing.T, a *node, id string) []*wire.Event {
	t.Helper()
	return tasktest.EventsOf(t, a.Agent, id)
}

// eventData decodes an event's data object.
func eventData(t *testing.T, e *wire.Event) map[string]any {
	t.Helper()
	return tasktest.EventData(t, e)
}

// metric reads one sample of the agent's metrics by its exact series name.
func metric(t *testing.T, a *node, series string) float64 {
	t.Helper()
	return tasktest.Metric(t, a.Agent, series)
}

// blockHandler runs until its context ends and then returns the context's
// error; started receives the task id when it begins.
func blockHandler(taskType string, idempotent bool, started chan<- string) agent.Handler {
	return tasktest.BlockHandler(taskType, idempotent, started)
}
