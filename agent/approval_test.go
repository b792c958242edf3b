package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

func TestApprovalPolicy(t *testing.T) {
	cfg := testConfig(t)
	cfg.Approvals = []agent.ApprovalRule{
		{TaskType: "echo", Field: "valve", Equals: json.RawMessage(`"open"`), Reason: "opening a valve needs a person"},
		{TaskType: "sleep"},
	}
	a := openAgent(t, cfg, nil)
	ctx := context.Background()

	t.Run("a payload that does not match runs at once", func(t *testing.T) {
		task := submit(t, a, "echo", `{"valve":"closed"}`)
		waitStatus(t, a, task.ID, wire.StatusCompleted)
	})
	t.Run("approve runs the held task", func(t *testing.T) {
		task := submit(t, a, "echo", `{"valve":"open"}`)
		if task.Status != wire.StatusNeedHuman || task.Human == nil || task.Human.Reason.Message != "opening a valve needs a person" {
			t.Fatalf("held task = %s, human %+v", describe(task), task.Human)
		}
		if _, err := a.Decide(ctx, admin, task.ID, agent.DecisionRequest{Action: agent.ActionApprove}); err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, a, task.ID, wire.StatusCompleted)
		want := []wire.Status{wire.StatusPending, wire.StatusNeedHuman, wire.StatusHumanDeciding, wire.StatusHumanApproved, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}
		if got := statuses(done); len(got) != len(want) {
			t.Fatalf("history %v, want %v", got, want)
		}
	})
	t.Run("modify merges the approved fields", func(t *testing.T) {
		task := submit(t, a, "echo", `{"valve":"open","pct":100}`)
		if _, err := a.Decide(ctx, admin, task.ID, agent.DecisionRequest{Action: agent.ActionModify,
			ApprovedFields: map[string]any{"pct": 20}}); err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, a, task.ID, wire.StatusCompleted)
		if !jsonEqual(t, done.Result, []byte(`{"valve":"open","pct":20}`)) {
			t.Errorf("result %s, want the amended payload", done.Result)
		}
	})
	t.Run("reject ends it rejected without running", func(t *testing.T) {
		task := submit(t, a, "sleep", `{"ms":1}`)
		if _, err := a.Decide(ctx, admin, task.ID, agent.DecisionRequest{Action: agent.ActionReject, RejectionReason: "not today"}); err != nil {
			t.Fatal(err)
		}
		done := waitStatus(t, a, task.ID, wire.StatusRejected)
		if len(done.Result) != 0 || !done.StartedAt.IsZero() {
			t.Errorf("a rejected task ran: result %s, started %v", done.Result, done.StartedAt)
		}
		if _, err := a.Decide(ctx, admin, task.ID, agent.DecisionRequest{Action: agent.ActionApprove}); err == nil {
			t.Error("a second decision was accepted")
		}
	})
	t.Run("held tasks do not take execution slots", func(t *testing.T) {
		for range cfg.MaxConcurrentTasks + 2 {
			submit(t, a, "sleep", `{"ms":1}`)
		}
	})
	t.Run("the held task survives a restart and can still be approved", func(t *testing.T) {
		task := submit(t, a, "echo", `{"valve":"open"}`)
		closeAgent(t, a, 0)
		b := openAgent(t, cfg, nil)
		if got, _ := b.Task(task.ID); got == nil || got.Status != wire.StatusNeedHuman {
			t.Fatalf("after restart: %s", describe(got))
		}
		if _, err := b.Decide(ctx, admin, task.ID, agent.DecisionRequest{Action: agent.ActionApprove}); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b, task.ID, wire.StatusCompleted)
	})
}

// TestDecisionAfterRestart: a handler that asked a person is gone after a
// restart; the decision made then runs it again, and its AskHuman returns
// that decision at once.
func TestDecisionAfterRestart(t *testing.T) {
	cfg := testConfig(t)
	a := openAgent(t, cfg, nil)
	ctx := context.Background()
	ask := submit(t, a, "confirm", `{"question":"open valve 3?"}`)
	waitStatus(t, a, ask.ID, wire.StatusNeedHuman)
	no := submit(t, a, "confirm", `{"question":"close valve 4?"}`)
	waitStatus(t, a, no.ID, wire.StatusNeedHuman)
	closeAgent(t, a, 0)

	b := openAgent(t, cfg, nil)
	if _, err := b.Decide(ctx, admin, ask.ID, agent.DecisionRequest{Action: agent.ActionApprove, Notes: "go"}); err != nil {
		t.Fatal(err)
	}
	done := waitStatus(t, b, ask.ID, wire.StatusCompleted)
	var res struct {
		Approved bool   `json:"approved"`
		Notes    string `json:"notes"`
	}
	if err := json.Unmarshal(done.Result, &res); err != nil || !res.Approved || res.Notes != "go" {
		t.Errorf("result %s, want the decision made after the restart", done.Result)
	}
	if n := countStatus(done, wire.StatusNeedHuman); n != 1 {
		t.Errorf("need_human %d times in the history, want once (the person is asked once)", n)
	}
	if _, err := b.Decide(ctx, admin, no.ID, agent.DecisionRequest{Action: agent.ActionReject}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b, no.ID, wire.StatusRejected)
}
