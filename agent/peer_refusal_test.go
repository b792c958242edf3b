package agent_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// TestPeerIllegalTransitions (issue #30, row 1): what a peer asks of a
// task it requested is refused when the task's state does not allow it,
// with the code the REST route gives, and nothing changes.
func TestPeerIllegalTransitions(t *testing.T) {
	ask := agent.Handler{Type: wire.SupportedTaskType{Type: "ask"}, Func: func(ctx context.Context, r *agent.Run) (any, error) {
		_, err := r.AskHuman(ctx, agent.HumanRequest{Reason: wire.Reason{Code: "confirmation", Message: "go on?"}})
		return map[string]bool{"asked": true}, err
	}}
	a := openAgent(t, testConfig(t), nil, ask)
	ctx := context.Background()
	request := func(typ, payload string) string {
		t.Helper()
		id := uuid.Must(uuid.NewV7()).String()
		req := &wire.TaskRequestPayload{Task: wire.TaskSpec{ID: id, Type: typ, Payload: wire.JSONValue(payload)}}
		if err := a.AcceptFromPeer(ctx, "peer-x", uuid.Must(uuid.NewV7()).String(), req); err != nil {
			t.Fatalf("request %s: %v", typ, err)
		}
		return id
	}
	done := request("echo", `{"n":1}`)
	before := waitStatus(t, a, done, wire.StatusCompleted)
	decision := func(id, action string) *wire.HumanDecisionPayload {
		return &wire.HumanDecisionPayload{TaskID: id, Decision: wire.Decision{Action: action}, DecidedBy: wire.DecidedBy{UserID: "u1"}}
	}

	t.Run("cancel of a completed task", func(t *testing.T) {
		wantCode(t, a.CancelFromPeer(ctx, "peer-x", &wire.TaskCancelPayload{TaskID: done}), wire.CodeTaskAlreadyCompleted)
	})
	t.Run("information for a completed task", func(t *testing.T) {
		wantCode(t, a.InfoFromPeer(ctx, "peer-x", &wire.TaskInfoProvidedPayload{TaskID: done, Fields: wire.JSONValue(`{"n":2}`)}), wire.CodeInvalidStateChange)
	})
	t.Run("decision on a completed task", func(t *testing.T) {
		wantCode(t, a.DecisionFromPeer("peer-x", decision(done, agent.ActionApprove)), wire.CodeInvalidStateChange)
	})
	t.Run("another peer's task", func(t *testing.T) {
		wantCode(t, a.CancelFromPeer(ctx, "peer-y", &wire.TaskCancelPayload{TaskID: done}), wire.CodePermissionDenied)
	})
	t.Run("nothing changed", func(t *testing.T) {
		after, err := a.Task(done)
		if err != nil {
			t.Fatal(err)
		}
		if after.Status != wire.StatusCompleted || after.Seq != before.Seq {
			t.Errorf("the task changed: %s seq %d, was seq %d", describe(after), after.Seq, before.Seq)
		}
	})
	t.Run("a task waiting for a person", func(t *testing.T) {
		asked := request("ask", `{}`)
		waitStatus(t, a, asked, wire.StatusNeedHuman)
		wantCode(t, a.InfoFromPeer(ctx, "peer-x", &wire.TaskInfoProvidedPayload{TaskID: asked, Fields: wire.JSONValue(`{"n":2}`)}), wire.CodeInvalidStateChange)
		if err := a.DecisionFromPeer("peer-x", decision(asked, agent.ActionApprove)); err != nil {
			t.Fatalf("the requester's decision: %v", err)
		}
		waitStatus(t, a, asked, wire.StatusCompleted)
		wantCode(t, a.DecisionFromPeer("peer-x", decision(asked, agent.ActionApprove)), wire.CodeInvalidStateChange)
	})
	t.Run("a cancel of a cancelled task is answered as is", func(t *testing.T) {
		asked := request("ask", `{}`)
		waitStatus(t, a, asked, wire.StatusNeedHuman)
		for range 2 {
			if err := a.CancelFromPeer(ctx, "peer-x", &wire.TaskCancelPayload{TaskID: asked}); err != nil {
				t.Fatalf("cancel: %v", err)
			}
		}
		waitStatus(t, a, asked, wire.StatusCancelled)
	})
}

// TestPeerRequestOverLimit (issue #30, rows 3 and 4): over
// max_concurrent_tasks a peer's request is rejected with rate_limited
// (4004) and a retry hint unless it asked to wait; a task stopped at its
// maximum duration carries 2004 in its answer and its error event.
func TestPeerRequestOverLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConcurrentTasks = 1
	cfg.MaxTaskDurationSeconds = 1
	started := make(chan string, 4)
	a := openAgent(t, cfg, nil, blockHandler("block", false, started))
	ctx := context.Background()
	request := func(meta map[string]any) (string, error) {
		id := uuid.Must(uuid.NewV7()).String()
		req := &wire.TaskRequestPayload{Task: wire.TaskSpec{ID: id, Type: "block", Payload: wire.JSONValue(`{}`)}}
		if meta != nil {
			req.Context = &wire.TaskContext{Metadata: meta}
		}
		return id, a.AcceptFromPeer(ctx, "peer-x", uuid.Must(uuid.NewV7()).String(), req)
	}
	first, err := request(nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started

	t.Run("rejected with 4004 and a retry hint", func(t *testing.T) {
		id, err := request(nil)
		if err != nil {
			t.Fatalf("the request over the limit: %v, want the task rejected", err)
		}
		task, err := a.Task(id)
		if err != nil {
			t.Fatal(err)
		}
		r := task.StatusResponse(false)
		if task.Status != wire.StatusRejected || task.ErrorCode != wire.CodeRateLimited || !task.Recoverable || r.NumericCode != wire.NumericTooManyTasks {
			t.Errorf("task over the limit: %s recoverable %v numeric %d, want rejected rate_limited, recoverable, 4004", describe(task), task.Recoverable, r.NumericCode)
		}
	})
	t.Run("a request that asks to wait gets the freed slot", func(t *testing.T) {
		errc := make(chan error, 1)
		var id string
		go func() {
			var err error
			id, err = request(map[string]any{agent.QueueWhenBusy: true})
			errc <- err
		}()
		// The first task ends at its maximum duration (1 s), within the
		// 5 s the waiting request holds on.
		if err := <-errc; err != nil {
			t.Fatalf("the waiting request: %v", err)
		}
		task, err := a.Task(id)
		if err != nil || task.Status == wire.StatusRejected || countStatus(task, wire.StatusConfirmed) != 1 {
			t.Errorf("the waiting request's task: %v %v, want it confirmed", err, task)
		}
	})
	t.Run("2004 at the maximum duration", func(t *testing.T) {
		task := waitStatus(t, a, first, wire.StatusFailed)
		if task.ErrorCode != wire.CodeExecutionTimeout || task.StatusResponse(false).NumericCode != wire.NumericTaskTooLong {
			t.Fatalf("task past its maximum duration: %s numeric %d, want execution_timeout 2004", describe(task), task.StatusResponse(false).NumericCode)
		}
		var found bool
		for _, ev := range eventsOf(t, a, first) {
			if ev.Type == wire.EventError {
				d := eventData(t, ev)
				found = d["code"] == string(wire.CodeExecutionTimeout) && d["numeric_code"] == float64(wire.NumericTaskTooLong)
			}
		}
		if !found {
			t.Error("no error event with code execution_timeout and numeric_code 2004")
		}
	})
}

// TestPeerRequestQueueBounded: a request that asks to wait for a slot is
// refused as a message (TP-SYS001, retriable, no task stored) when none
// frees in time, so that the sender sends it again.
func TestPeerRequestQueueBounded(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConcurrentTasks = 1
	started := make(chan string, 2)
	a := openAgent(t, cfg, nil, blockHandler("block", false, started))
	ctx := context.Background()
	request := func() (string, error) {
		id := uuid.Must(uuid.NewV7()).String()
		req := &wire.TaskRequestPayload{Task: wire.TaskSpec{ID: id, Type: "block", Payload: wire.JSONValue(`{}`)},
			Context: &wire.TaskContext{Metadata: map[string]any{agent.QueueWhenBusy: true}}}
		return id, a.AcceptFromPeer(ctx, "peer-x", uuid.Must(uuid.NewV7()).String(), req)
	}
	if _, err := request(); err != nil {
		t.Fatal(err)
	}
	<-started
	id, err := request()
	if we := wantCode(t, err, wire.CodeSysOverloaded); !we.Retriable {
		t.Errorf("the refusal %v is not retriable", we)
	}
	if _, err := a.Task(id); err == nil {
		t.Errorf("the refused request's task %s was stored", id)
	}
}
