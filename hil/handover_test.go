package hil_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/wire"
)

// TestEscalateHandsOver: a level-1 reviewer hands the request to a second
// reviewer; the task goes need_human → human_deciding → need_human (seed
// 004 §3.2: need_human ↔ human_decision), the request is at level 2 where
// only that level decides, and the decision passes through human_deciding.
func TestEscalateHandsOver(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := e.confirm("open the valve?")
	r, err := e.m.Decide(ctx, reviewL1, id, agent.DecisionRequest{Action: hil.ActionEscalate, Notes: "needs the plant manager"})
	if err != nil {
		t.Fatalf("escalate: %v", err)
	}
	if r.EscalationLevel != 2 || r.TaskID != id || r.State != "pending" {
		t.Fatalf("request after the hand-over: level %d %s, want 2 pending", r.EscalationLevel, r.State)
	}
	task, err := e.a.Task(id)
	if err != nil {
		t.Fatal(err)
	}
	h := statusesOf(task)
	if want := []wire.Status{wire.StatusNeedHuman, wire.StatusHumanDeciding, wire.StatusNeedHuman}; task.Status != wire.StatusNeedHuman ||
		len(h) < 3 || !slices.Equal(h[len(h)-3:], want) || task.Human == nil || task.Human.EscalationLevel != 2 {
		t.Fatalf("task %s with history %v, human %+v; want it back in need_human at level 2", task.Status, h, task.Human)
	}
	_, err = e.m.Decide(ctx, reviewL1, id, agent.DecisionRequest{Action: agent.ActionApprove})
	wantCode(t, err, wire.CodePermissionDenied, http.StatusForbidden)
	if _, err := e.m.Decide(ctx, reviewL2, id, agent.DecisionRequest{Action: agent.ActionApprove}); err != nil {
		t.Fatalf("second reviewer: %v", err)
	}
	done := e.waitStatus(id, wire.StatusCompleted)
	h = statusesOf(done)
	if i := slices.Index(h, wire.StatusHumanApproved); i < 1 || h[i-1] != wire.StatusHumanDeciding {
		t.Errorf("history %v: the approval does not follow human_deciding", h)
	}

	t.Run("not past the last level", func(t *testing.T) {
		id := e.confirm("again?")
		for level := 1; level < 3; level++ {
			p := auth.Principal{ID: "admin", Scopes: []auth.Scope{auth.ScopeAdmin}}
			if _, err := e.m.Decide(ctx, p, id, agent.DecisionRequest{Action: hil.ActionEscalate}); err != nil {
				t.Fatalf("escalate from level %d: %v", level, err)
			}
		}
		_, err := e.m.Decide(ctx, admin, id, agent.DecisionRequest{Action: hil.ActionEscalate})
		wantCode(t, err, wire.CodeInvalidStateChange, http.StatusConflict)
	})
}

func statusesOf(t *wire.Task) []wire.Status {
	var s []wire.Status
	for _, tr := range t.History {
		s = append(s, tr.Status)
	}
	return s
}
