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
