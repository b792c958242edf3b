package hil_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/clocktest"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
	"github.com/synapse-edge/synapse/wire"
)

// pollTimeout bounds every wait for a state; generous for -race.
const pollTimeout = 10 * time.Second

// fakeClock is the test clock: time moves only on Advance.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return tasktest.NewClock() }

// Principals of the tests.
var (
	admin    = tasktest.Admin
	reviewL1 = auth.Principal{ID: "tok_l1", Name: "first line", Scopes: []auth.Scope{auth.ScopeHILL1}}
	reviewL2 = auth.Principal{ID: "tok_l2", Name: "second line", Scopes: []auth.Scope{auth.ScopeHILL2}}
	writer   = auth.Principal{ID: "tok_w", Name: "writer", Scopes: []auth.Scope{auth.ScopeTasksWrite}}
)

// env is an open agent with a started manager on a fake clock.
type env struct {
	t        *testing.T
	cfg      agent.Config
	clock    *fakeClock
	handlers []agent.Handler
	opts     hil.Options
	a        *agent.Agent
	m        *hil.Manager
}

// newEnv opens an agent on a fresh data directory (mutate tweaks its
// config) and starts a manager; both close when the test ends.
func newEnv(t *testing.T, mutate ...func(*agent.Config)) *env {
	t.Helper()
	return newEnvWith(t, newFakeClock(), nil, mutate...)
}

// newEnvWith is newEnv with a given clock and extra handlers.
func newEnvWith(t *testing.T, clock *fakeClock, hs []agent.Handler, mutate ...func(*agent.Config)) *env {
	t.Helper()
	return newEnvOpts(t, clock, hs, hil.Options{}, mutate...)
}

// newEnvHIL is newEnv with the manager's options (NotifyBackoff 1 s
// unless set).
func newEnvHIL(t *testing.T, opts hil.Options, mutate ...func(*agent.Config)) *env {
	t.Helper()
	return newEnvOpts(t, newFakeClock(), nil, opts, mutate...)
}

// newEnvOpts is newEnv with a given clock, extra handlers and the
// manager's options.
func newEnvOpts(t *testing.T, clock *fakeClock, hs []agent.Handler, opts hil.Options, mutate ...func(*agent.Config)) *env {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = "t"
	for _, f := range mutate {
		f(&cfg)
	}
	if opts.NotifyBackoff == 0 {
		opts.NotifyBackoff = time.Second
	}
	e := &env{t: t, cfg: cfg, clock: clock, handlers: hs, opts: opts}
	e.open()
	return e
}

// open opens the agent and the manager on e's data directory and clock.
func (e *env) open() {
	t := e.t
	t.Helper()
	a, err := agent.New(e.cfg, wiretest.Options(t, e.cfg, agent.Options{Clock: e.clock}))
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		t.Fatalf("handlers.Register: %v", err)
	}
	for _, h := range e.handlers {
		if err := a.Handle(h); err != nil {
			t.Fatalf("Handle(%s): %v", h.Type.Type, err)
		}
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatalf("agent.Open: %v", err)
	}
	m := hil.New(a, e.opts)
	if err := m.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	e.a, e.m = a, m
	t.Cleanup(e.close)
}

// close closes manager and agent; safe to call twice.
func (e *env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.m.Close(ctx); err != nil {
		e.t.Errorf("Manager.Close: %v", err)
	}
	if err := e.m.Close(ctx); err != nil {
		e.t.Errorf("second Manager.Close: %v", err)
	}
	actx, acancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer acancel()
	if err := e.a.Close(actx); err != nil {
		e.t.Errorf("agent.Close: %v", err)
	}
}

// confirm submits a confirm task and waits until it waits for a person
// and the manager has taken it in.
func (e *env) confirm(question string, options ...wire.HumanOption) string {
	t := e.t
	t.Helper()
	payload, _ := json.Marshal(map[string]any{"question": question, "options": options})
	task, err := e.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "confirm", Payload: payload}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	e.waitStatus(task.ID, wire.StatusNeedHuman)
	if err := e.m.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return task.ID
}

// waitStatus polls the task until it is in state want.
func (e *env) waitStatus(id string, want wire.Status) *wire.Task {
	t := e.t
	t.Helper()
	var last *wire.Task
	testutil.Eventually(t, pollTimeout, fmt.Sprintf("task %s to be %s", id, want), func() bool {
		var err error
		if last, err = e.a.Task(id); err != nil {
			t.Fatalf("Task(%s): %v", id, err)
		}
		if last.Status != want && last.Status.Terminal() {
			t.Fatalf("task %s is %s, want %s", id, last.Status, want)
		}
		return last.Status == want
	})
	return last
}

// pending returns the manager's pending request of task id, failing the
// test when there is none.
func (e *env) pending(id string) *hil.Request {
	e.t.Helper()
	for _, r := range e.m.Pending() {
		if r.TaskID == id {
			return r
		}
	}
	e.t.Fatalf("task %s has no pending request; pending: %v", id, e.m.Pending())
	return nil
}

// logLines returns the log lines of a task's events that start with "hil:".
func (e *env) logLines(id string) []string {
	e.t.Helper()
	evs, err := e.a.Events(id, 0)
	if err != nil {
		e.t.Fatalf("Events: %v", err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type != wire.EventLog {
			continue
		}
		var d struct {
			Line string `json:"line"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			e.t.Fatalf("log event data %s: %v", ev.Data, err)
		}
		if strings.HasPrefix(d.Line, "hil:") {
			out = append(out, d.Line)
		}
	}
	return out
}

// wantCode checks that err is a wire error with code and HTTP status.
func wantCode(t *testing.T, err error, code wire.ErrorCode, status int) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %s", code)
	}
	we := wire.AsError(err)
	if we.Code != code || we.Status() != status {
		t.Fatalf("err = %v (status %d), want code %s status %d", err, we.Status(), code, status)
	}
}

// stepNames lists the step names of a request's audit trail.
func stepNames(r *hil.Request) []string {
	var out []string
	for _, s := range r.Steps {
		out = append(out, fmt.Sprintf("%s@%d", s.Step, s.Level))
	}
	return out
}
