package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// The tests of parked.go: a parked task keeps no payload in memory and
// resumes from what the store holds.

var parkedAdmin = auth.Principal{ID: "admin", Name: "admin", Scopes: []auth.Scope{auth.ScopeAdmin}}

// keepHandler needs "go" and returns its whole payload.
var keepHandler = Handler{
	Type:        wire.SupportedTaskType{Type: "keep", Name: "Keep"},
	InputSchema: json.RawMessage(`{"type":"object","required":["go"]}`),
	Func: func(ctx context.Context, r *Run) (any, error) {
		return r.Payload(), nil
	},
}

func openParked(t *testing.T, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := a.Handle(keepHandler); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	return a
}

func closeParked(t *testing.T, a *Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func parkedConfig(t *testing.T) Config {
	cfg := Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = "t"
	cfg.AgentName = "tester"
	return cfg
}

// bigPayload is a payload object with a field of n bytes.
func bigPayload(n int) string {
	return `{"big":"` + strings.Repeat("x", n) + `"}`
}

// waitLight polls until the live run of id holds no payload.
func waitLight(t *testing.T, a *Agent, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := a.eng.live(id)
		if r == nil {
			t.Fatalf("task %s is not live", id)
		}
		r.mu.Lock()
		light, n := r.light, len(r.task.Payload)
		r.mu.Unlock()
		if light && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still holds its payload in memory (%d bytes, light %v)", id, n, light)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitDone(t *testing.T, a *Agent, id string) *wire.Task {
	t.Helper()
	task, err := a.Wait(context.Background(), id, 10*time.Second)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if !task.Status.Terminal() {
		t.Fatalf("task %s is still %s", id, task.Status)
	}
	return task
}

// wantBig checks that the task completed with the big field and extra
// fields in its payload and result.
func wantBig(t *testing.T, task *wire.Task, n int, extra ...string) {
	t.Helper()
	if task.Status != wire.StatusCompleted {
		t.Fatalf("status = %s (%s), want completed", task.Status, task.ErrorMessage)
	}
	for _, v := range []wire.JSONValue{task.Payload, task.Result} {
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("payload/result %.80s: %v", v, err)
		}
		if s, _ := m["big"].(string); len(s) != n {
			t.Errorf("big field has %d bytes, want %d", len(s), n)
		}
		for _, k := range extra {
			if _, ok := m[k]; !ok {
				t.Errorf("field %q missing from %.80s…", k, v)
			}
		}
	}
}

func TestParkedInfoNeededResumesFromDisk(t *testing.T) {
	a := openParked(t, parkedConfig(t))
	defer closeParked(t, a)
	const n = 200 << 10
	task, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(bigPayload(n))}, SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if task.Status != wire.StatusInfoNeeded {
		t.Fatalf("status = %s, want info_needed", task.Status)
	}
	waitLight(t, a, task.ID)
	if got := a.ParkedTasks(); got != 1 {
		t.Errorf("ParkedTasks = %d, want 1", got)
	}
	// A note and a provide that leaves it waiting: the payload is read
	// back, kept whole on disk, and dropped again.
	a.NoteTask(task.ID, "a note while parked")
	if _, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"first":1}`)); err != nil {
		t.Fatalf("ProvideInfo: %v", err)
	}
	waitLight(t, a, task.ID)
	// A refused change reads the payload back and drops it again.
	if _, err := a.HandOver(context.Background(), parkedAdmin, task.ID, 2, ""); err == nil {
		t.Fatal("HandOver of a task in info_needed succeeded")
	}
	waitLight(t, a, task.ID)
	stored, err := a.Task(task.ID)
	if err != nil || stored.Status != wire.StatusInfoNeeded || len(stored.Payload) < n {
		t.Fatalf("stored = %s with %d payload bytes, %v; want info_needed with the whole payload", stored.Status, len(stored.Payload), err)
	}
	if _, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"go":true}`)); err != nil {
		t.Fatalf("ProvideInfo: %v", err)
	}
	wantBig(t, waitDone(t, a, task.ID), n, "first", "go")
	if got := a.ParkedTasks(); got != 0 {
		t.Errorf("ParkedTasks = %d after it ran, want 0", got)
	}
}

func TestParkedResumeAfterRestart(t *testing.T) {
	cfg := parkedConfig(t)
	cfg.Approvals = []ApprovalRule{{TaskType: "keep", Field: "ask", Equals: json.RawMessage(`true`)}}
	a := openParked(t, cfg)
	const n = 100 << 10
	info, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(bigPayload(n))}, SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	held, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep",
		Payload: wire.JSONValue(`{"ask":true,"go":1,` + bigPayload(n)[1:])}, SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if held.Status != wire.StatusNeedHuman {
		t.Fatalf("status = %s, want need_human", held.Status)
	}
	if s := held.Human.Context.TaskSummary; len(s) > 1024 {
		t.Errorf("the request's summary quotes %d bytes of payload", len(s))
	}
	cancelled, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(bigPayload(n))}, SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	closeParked(t, a)

	a = openParked(t, cfg)
	defer closeParked(t, a)
	for _, id := range []string{info.ID, held.ID, cancelled.ID} {
		waitLight(t, a, id)
	}
	if got := a.ParkedTasks(); got != 3 {
		t.Errorf("ParkedTasks after restart = %d, want 3", got)
	}
	if _, err := a.ProvideInfo(context.Background(), info.ID, wire.JSONValue(`{"go":2}`)); err != nil {
		t.Fatalf("ProvideInfo: %v", err)
	}
	wantBig(t, waitDone(t, a, info.ID), n, "go")
	if _, err := a.Decide(context.Background(), parkedAdmin, held.ID, DecisionRequest{Action: ActionModify, ApprovedFields: map[string]any{"extra": 1}}); err != nil {
		t.Fatalf("Decide: %v", err)
	}
	wantBig(t, waitDone(t, a, held.ID), n, "ask", "extra")
	got, err := a.Cancel(context.Background(), cancelled.ID)
	if err != nil || got.Status != wire.StatusCancelled {
		t.Fatalf("Cancel = %v, %v; want cancelled", got, err)
	}
	if len(got.Payload) < n {
		t.Errorf("the cancelled task kept %d payload bytes, want the whole payload", len(got.Payload))
	}
	if got := a.ParkedTasks(); got != 0 {
		t.Errorf("ParkedTasks = %d, want 0", got)
	}
}

func TestParkedBound(t *testing.T) {
	cfg := parkedConfig(t)
	cfg.MaxParkedTasks = 2
	a := openParked(t, cfg)
	defer closeParked(t, a)
	var ids []string
	for range 2 {
		task, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(`{}`)}, SubmitOptions{})
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		ids = append(ids, task.ID)
	}
	_, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(`{}`)}, SubmitOptions{})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeTooManyParked || we.Status() != 429 {
		t.Fatalf("third parked Submit = %v, want 429 %s", err, wire.CodeTooManyParked)
	}
	if !strings.Contains(we.Message, "max_parked_tasks is 2") {
		t.Errorf("message %q does not name the limit", we.Message)
	}
	// A task that runs at once is not parked and is accepted.
	if _, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(`{"go":1}`)}, SubmitOptions{}); err != nil {
		t.Fatalf("Submit of a runnable task: %v", err)
	}
	if _, err := a.Cancel(context.Background(), ids[0]); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if _, err := a.Submit(context.Background(), parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(`{}`)}, SubmitOptions{}); err != nil {
		t.Fatalf("Submit after a parked task was cancelled: %v", err)
	}
}
