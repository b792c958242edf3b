// Package tasktest holds the task helpers of the tests of the packages
// built on the engine (agent, peer, contracts, hil, handlers): a valid
// configuration, the admin principal, the fake clock, submit, wait for a state,
// read events and metrics, assert an error code. Each fails the test with
// what it saw.
package tasktest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/internal/keyfile"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// Within bounds every wait of this package; generous for -race on 2 cores.
const Within = 10 * time.Second

// Admin is the principal the tests submit as.
var Admin = auth.Principal{ID: "admin", Name: "admin", Scopes: []auth.Scope{auth.ScopeAdmin}}

// Config is a valid agent configuration with its own data directory
// (admin token "t", agent name "tester").
func Config(t testing.TB) agent.Config {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = "t"
	cfg.AgentName = "tester"
	return cfg
}

// NewClock is the tests' fake clock, at a fixed instant; time moves only
// on Advance.
func NewClock() *clocktest.Clock {
	return clocktest.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// Submit submits a task as p and fails the test if it is refused.
func Submit(t testing.TB, a *agent.Agent, p auth.Principal, taskType, payload string) *wire.Task {
	t.Helper()
	task, err := a.Submit(context.Background(), p, &wire.SubmitRequest{TaskType: taskType, Payload: wire.JSONValue(payload)}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit(%s, %s): %v", taskType, payload, err)
	}
	return task.Task
}

// WaitFinal waits until the task is in a final state.
func WaitFinal(t testing.TB, a *agent.Agent, id string) *wire.Task {
	t.Helper()
	task, err := a.Wait(context.Background(), id, Within)
	if err != nil {
		t.Fatalf("Wait(%s): %v", id, err)
	}
	if !task.Status.Terminal() {
		t.Fatalf("task %s is still %s after %s", id, task.Status, Within)
	}
	return task
}

// WaitStatus polls until the stored task is in status want; each state
// seen is logged, so a failure shows the last one.
func WaitStatus(t testing.TB, a *agent.Agent, id string, want wire.Status) *wire.Task {
	t.Helper()
	var task *wire.Task
	last := ""
	testutil.Eventually(t, Within, "task "+id+" to be "+string(want), func() bool {
		var err error
		task, err = a.Task(id)
		if d := Describe(task); d != last {
			t.Logf("task %s: %s", id, d)
			last = d
		}
		return err == nil && task.Status == want
	})
	return task
}

// Describe is a task's status, error code and message on one line.
func Describe(task *wire.Task) string {
	if task == nil {
		return "<nil>"
	}
	return string(task.Status) + " " + string(task.ErrorCode) + " " + task.ErrorMessage
}

// WantCode asserts err is a *wire.Error with code.
func WantCode(t testing.TB, err error, code wire.ErrorCode) *wire.Error {
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

// Statuses lists the states of a task's history.
func Statuses(task *wire.Task) []wire.Status {
	var out []wire.Status
	for _, h := range task.History {
		out = append(out, h.Status)
	}
	return out
}

// JSONEqual compares two JSON texts by value; got that is not JSON is an
// error of the test, want that is not JSON a fatal one.
func JSONEqual(t testing.TB, got, want []byte) bool {
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

// EventsOf reads the stored events of a task.
func EventsOf(t testing.TB, a *agent.Agent, id string) []*wire.Event {
	t.Helper()
	evs, err := a.Events(id, 0)
	if err != nil {
		t.Fatalf("Events(%s): %v", id, err)
	}
	return evs
}

// EventData decodes an event's data object.
func EventData(t testing.TB, e *wire.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("event %d data %q: %v", e.Seq, e.Data, err)
	}
	return m
}

// Metric reads one sample of the agent's metrics by its exact series
// name; 0 when the series is absent.
func Metric(t testing.TB, a *agent.Agent, series string) float64 {
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

// BlockHandler runs until its context ends and then returns the context's
// error; started receives the task id when it begins.
func BlockHandler(taskType string, idempotent bool, started chan<- string) agent.Handler {
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

// Key reads the private key an agent keeps in its data directory.
func Key(t testing.TB, dataDir string) ed25519.PrivateKey {
	t.Helper()
	path := filepath.Join(dataDir, agent.KeyFile)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("agent key: %v", err)
	}
	k, err := keyfile.LoadOrCreateKey(path)
	if err != nil {
		t.Fatalf("agent key: %v", err)
	}
	return k
}

// Outbox lists every item of one state (pending or dead) of a network's
// outbox, page by page.
func Outbox(t testing.TB, n *peer.Network, state outbox.State) []peer.OutboxEntry {
	t.Helper()
	var all []peer.OutboxEntry
	after := ""
	for range 1000 {
		items, next, err := n.Outbox().List(peer.OutboxQuery{State: string(state), After: after, Limit: 1000})
		if err != nil {
			t.Fatalf("Outbox(%s): %v", state, err)
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		after = next
	}
	t.Fatal("Outbox did not end after 1000 pages")
	return nil
}
