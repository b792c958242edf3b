package peer_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/peer"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
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

func newFakeClock() *fakeClock {
	return clocktest.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// admin is the principal tests submit as.
var admin = auth.Principal{ID: "admin", Name: "admin", Scopes: []auth.Scope{auth.ScopeAdmin}}

// testConfig is a valid configuration with its own data directory.
func testConfig(t *testing.T) agent.Config {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = "t"
	cfg.AgentName = "tester"
	return cfg
}

// openAgent builds and opens an agent with the given clock and extra
// handlers; it is closed when the test ends (running tasks get 100 ms).
func openAgent(t *testing.T, cfg agent.Config, clock agent.Clock, hs ...agent.Handler) *node {
	t.Helper()
	var opts agent.Options
	if clock != nil {
		opts.Clock = clock
	}
	ag, err := agent.New(cfg, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	nw, err := peer.New(ag, peer.Options{})
	if err != nil {
		t.Fatalf("peer.New: %v", err)
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
	task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: taskType, Payload: wire.JSONValue(payload)}, nil)
	if err != nil {
		t.Fatalf("Submit(%s, %s): %v", taskType, payload, err)
	}
	return task
}

// waitFinal waits until the task is in a final state.
func waitFinal(t *testing.T, a *node, id string) *wire.Task {
	t.Helper()
	task, err := a.Wait(context.Background(), id, 10*time.Second)
	if err != nil {
		t.Fatalf("Wait(%s): %v", id, err)
	}
	if !task.Status.Terminal() {
		t.Fatalf("task %s is still %s after 10s", id, task.Status)
	}
	return task
}

// waitStatus polls until the stored task is in status want.
func waitStatus(t *testing.T, a *node, id string, want wire.Status) *wire.Task {
	t.Helper()
	var task *wire.Task
	last := "" // each state seen is logged: a failure shows the last one
	testutil.Eventually(t, 10*time.Second, "task "+id+" to be "+string(want), func() bool {
		var err error
		task, err = a.Task(id)
		if d := describe(task); d != last {
			t.Logf("task %s: %s", id, d)
			last = d
		}
		return err == nil && task.Status == want
	})
	return task
}

func describe(task *wire.Task) string {
	if task == nil {
		return "<nil>"
	}
	return string(task.Status) + " " + string(task.ErrorCode) + " " + task.ErrorMessage
}

// wantCode asserts err is a *wire.Error with code.
func wantCode(t *testing.T, err error, code wire.ErrorCode) *wire.Error {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("error = %v (%T), want *wire.Error %s", err, err, code)
	}
	if we.Code != code {
		t.Fatalf("error code = %s (%v), want %s", we.Code, we, code)
	}
	return we
}

// statuses lists the states of a task's history.
func statuses(task *wire.Task) []wire.Status {
	var out []wire.Status
	for _, h := range task.History {
		out = append(out, h.Status)
	}
	return out
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("invalid JSON %q: %v", got, err)
		return false
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("invalid JSON %q: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

// eventsOf reads the stored events of a task.
func eventsOf(t *testing.T, a *node, id string) []*wire.Event {
	t.Helper()
	evs, err := a.Events(id, 0)
	if err != nil {
		t.Fatalf("Events(%s): %v", id, err)
	}
	return evs
}

// eventData decodes an event's data object.
func eventData(t *testing.T, e *wire.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("event %d data %q: %v", e.Seq, e.Data, err)
	}
	return m
}

// metric reads one sample of the agent's metrics by its exact series name.
func metric(t *testing.T, a *node, series string) float64 {
	t.Helper()
	var buf bytes.Buffer
	a.Metrics().Write(&buf)
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && name == series {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("metric %s = %q: %v", series, value, err)
			}
			return v
		}
	}
	return 0
}

// blockHandler runs until its context ends and then returns the context's
// error; started receives the task id when it begins.
func blockHandler(taskType string, idempotent bool, started chan<- string) agent.Handler {
	return agent.Handler{
		Type:       wire.SupportedTaskType{Type: taskType},
		Idempotent: idempotent,
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			if started != nil {
				started <- r.ID()
			}
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
}
