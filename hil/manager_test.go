package hil_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

func TestEscalationToDefaultAction(t *testing.T) {
	tests := []struct {
		name       string
		action     string
		wantStatus wire.Status
	}{
		{"default reject", "", wire.StatusRejected},
		{"default approve", agent.ActionApprove, wire.StatusCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			e := newEnvHIL(t, hil.Options{Config: hil.Config{DefaultAction: tt.action}})
			sub, _, _ := e.m.Subscribe(0, false)
			defer sub.Close()
			id := e.confirm("ship the firmware?")

			r := e.pending(id)
			if r.EscalationLevel != 1 || r.Levels != 3 || r.ReviewersScope != auth.ScopeHILL1 {
				t.Fatalf("new request: level %d of %d, scope %q; want 1 of 3, hil:l1", r.EscalationLevel, r.Levels, r.ReviewersScope)
			}
			if want := wire.FormatTime(e.clock.Now().Add(300 * time.Second)); r.Deadline != want {
				t.Errorf("deadline = %s, want %s", r.Deadline, want)
			}
			if r.Reason.Message != "ship the firmware?" {
				t.Errorf("reason = %+v, want the question", r.Reason)
			}

			e.clock.Advance(299 * time.Second)
			if got := e.pending(id).EscalationLevel; got != 1 {
				t.Fatalf("level after 299 s = %d, want 1", got)
			}
			for level := 2; level <= 3; level++ {
				e.clock.Advance(time.Second)
				r := e.pending(id)
				if r.EscalationLevel != level || r.ReviewersScope != auth.Scope("hil:l"+string(rune('0'+level))) {
					t.Fatalf("level = %d (scope %s), want %d", r.EscalationLevel, r.ReviewersScope, level)
				}
				if want := wire.FormatTime(e.clock.Now().Add(300 * time.Second)); r.Deadline != want {
					t.Errorf("level %d deadline = %s, want %s", level, r.Deadline, want)
				}
				e.clock.Advance(299 * time.Second)
			}
			e.clock.Advance(time.Second)
			task := e.waitStatus(id, tt.wantStatus)
			// The manager records the decision once Decide has returned.
			testutil.Eventually(t, pollTimeout, "the request to leave the pending list", func() bool { return len(e.m.Pending()) == 0 })

			got, err := e.m.Get(context.Background(), id)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			wantAction := tt.action
			if wantAction == "" {
				wantAction = agent.ActionReject
			}
			if got.State != hildb.Decided || got.Decision == nil || got.Decision.Action != wantAction ||
				got.Decision.DecidedBy != "system:escalation" || got.Decision.Level != 3 || got.Decision.TaskStatus == "" {
				t.Errorf("request after the default = state %s decision %+v; want decided, %s by system:escalation at level 3", got.State, got.Decision, wantAction)
			}
			wantSteps := []string{"created@1", "escalated@2", "escalated@3", "default_applied@3"}
			if names := stepNames(got); !slices.Equal(names, wantSteps) {
				t.Errorf("steps = %v, want %v", names, wantSteps)
			}
			lines := e.logLines(id)
			for _, want := range []string{"hil: request created at level 1", "hil: escalated to level 2", "hil: escalated to level 3", "hil: default action " + wantAction} {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want) }) {
					t.Errorf("task events lack %q; hil lines: %q", want, lines)
				}
			}
			if want := "by system:escalation"; !slices.ContainsFunc(task.History, func(tr wire.Transition) bool { return strings.Contains(tr.Reason, want) }) {
				t.Errorf("task history %+v has no transition %q", task.History, want)
			}

			var changes []string
			for len(changes) < 4 {
				select {
				case ev, ok := <-sub.C:
					if !ok {
						t.Fatalf("subscription closed after %v", changes)
					}
					changes = append(changes, ev.Change)
				case <-time.After(pollTimeout):
					t.Fatalf("events so far %v, want 4", changes)
				}
			}
			if want := []string{"created", "escalated", "escalated", "decided"}; !slices.Equal(changes, want) {
				t.Errorf("events = %v, want %v", changes, want)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("15 simulated minutes took %s of real time", d)
			}
		})
	}
}

func TestDecideScopes(t *testing.T) {
	e := newEnv(t)
	id := e.confirm("open the valve?")
	tests := []struct {
		name string
		p    auth.Principal
	}{
		{"level 2 reviewer at level 1", reviewL2},
		{"tasks:write token", writer},
		{"no scopes", auth.Principal{ID: "nobody"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.m.Decide(context.Background(), tt.p, id, agent.DecisionRequest{Action: agent.ActionApprove})
			wantCode(t, err, wire.CodePermissionDenied, http.StatusForbidden)
		})
	}
	t.Run("level 1 reviewer after escalation", func(t *testing.T) {
		e.clock.Advance(300 * time.Second)
		_, err := e.m.Decide(context.Background(), reviewL1, id, agent.DecisionRequest{Action: agent.ActionApprove})
		wantCode(t, err, wire.CodePermissionDenied, http.StatusForbidden)
	})
	t.Run("level 2 reviewer after escalation", func(t *testing.T) {
		r, err := e.m.Decide(context.Background(), reviewL2, id, agent.DecisionRequest{Action: agent.ActionReject, RejectionReason: "valve is stuck"})
		if err != nil {
			t.Fatalf("Decide: %v", err)
		}
		if r.State != hildb.Decided || r.Decision.DecidedBy != reviewL2.ID || r.Decision.Level != 2 || r.Decision.RejectionReason != "valve is stuck" {
			t.Errorf("answer = %+v / %+v", r, r.Decision)
		}
		e.waitStatus(id, wire.StatusRejected)
	})
	t.Run("views", func(t *testing.T) {
		for _, p := range []auth.Principal{reviewL1, reviewL2, writer, admin} {
			if !e.m.CanView(p) {
				t.Errorf("CanView(%s) = false", p.ID)
			}
		}
		if e.m.CanView(auth.Principal{ID: "t1", Scopes: []auth.Scope{auth.ScopeTier1Write}}) {
			t.Errorf("CanView(tier1:write) = true")
		}
	})
}

func TestDecideActions(t *testing.T) {
	e := newEnv(t)
	t.Run("modify", func(t *testing.T) {
		id := e.confirm("use this portrait?", wire.HumanOption{Field: "authorized", Value: false, ProsCons: "ask first"})
		if opts := e.pending(id).Options; len(opts) != 1 || opts[0].Field != "authorized" {
			t.Fatalf("options = %+v", opts)
		}
		fields := map[string]any{"authorized": true, "crop": "square"}
		r, err := e.m.Decide(context.Background(), reviewL1, id, agent.DecisionRequest{Action: agent.ActionModify, ApprovedFields: fields, Notes: "licence checked"})
		if err != nil {
			t.Fatalf("Decide: %v", err)
		}
		if r.Decision.Action != agent.ActionModify || r.Decision.Notes != "licence checked" {
			t.Errorf("decision = %+v", r.Decision)
		}
		task := e.waitStatus(id, wire.StatusCompleted)
		var res struct {
			Action         string         `json:"action"`
			ApprovedFields map[string]any `json:"approved_fields"`
		}
		if err := json.Unmarshal(task.Result, &res); err != nil {
			t.Fatalf("result %s: %v", task.Result, err)
		}
		if res.Action != agent.ActionModify || res.ApprovedFields["authorized"] != true || res.ApprovedFields["crop"] != "square" {
			t.Errorf("result = %+v, want modify with the approved fields", res)
		}
	})
	t.Run("modify without fields", func(t *testing.T) {
		id := e.confirm("again?")
		_, err := e.m.Decide(context.Background(), admin, id, agent.DecisionRequest{Action: agent.ActionModify})
		wantCode(t, err, wire.CodeInvalidParams, http.StatusBadRequest)
		_, err = e.m.Decide(context.Background(), admin, id, agent.DecisionRequest{Action: "maybe"})
		wantCode(t, err, wire.CodeInvalidParams, http.StatusBadRequest)
		if _, err := e.m.Decide(context.Background(), admin, id, agent.DecisionRequest{Action: agent.ActionApprove}); err != nil {
			t.Fatalf("approve: %v", err)
		}
		e.waitStatus(id, wire.StatusCompleted)
	})
	t.Run("already decided", func(t *testing.T) {
		id := e.confirm("once?")
		if _, err := e.m.Decide(context.Background(), reviewL1, id, agent.DecisionRequest{Action: agent.ActionApprove}); err != nil {
			t.Fatalf("first decision: %v", err)
		}
		_, err := e.m.Decide(context.Background(), admin, id, agent.DecisionRequest{Action: agent.ActionReject})
		wantCode(t, err, wire.CodeInvalidStateChange, http.StatusConflict)
		if !strings.Contains(err.Error(), "already decided") {
			t.Errorf("err = %v, want it to say already decided", err)
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		_, err := e.m.Decide(context.Background(), admin, "no-such-task", agent.DecisionRequest{Action: agent.ActionApprove})
		wantCode(t, err, wire.CodeTaskNotFound, http.StatusNotFound)
		_, err = e.m.Get(context.Background(), "no-such-task")
		wantCode(t, err, wire.CodeTaskNotFound, http.StatusNotFound)
	})
	t.Run("task that never asked", func(t *testing.T) {
		task, err := e.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`)}, agent.SubmitOptions{})
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		e.waitStatus(task.ID, wire.StatusCompleted)
		_, err = e.m.Get(context.Background(), task.ID)
		wantCode(t, err, wire.CodeNotFound, http.StatusNotFound)
		_, err = e.m.Decide(context.Background(), admin, task.ID, agent.DecisionRequest{Action: agent.ActionApprove})
		wantCode(t, err, wire.CodeInvalidStateChange, http.StatusConflict)
	})
}

func TestClosedWhenTheTaskStopsWaiting(t *testing.T) {
	e := newEnv(t)
	id := e.confirm("wait for me?")
	if _, err := e.a.Cancel(context.Background(), id); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if err := e.m.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if p := e.m.Pending(); len(p) != 0 {
		t.Fatalf("pending after cancel = %v", p)
	}
	r, err := e.m.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if r.State != hildb.Closed || !strings.Contains(r.Note, "cancelled") {
		t.Errorf("request = state %s note %q, want closed, cancelled", r.State, r.Note)
	}
	_, err = e.m.Decide(context.Background(), admin, id, agent.DecisionRequest{Action: agent.ActionApprove})
	wantCode(t, err, wire.CodeInvalidStateChange, http.StatusConflict)
	// The deadline passing later changes nothing.
	e.clock.Advance(time.Hour)
	if got, _ := e.m.Get(context.Background(), id); got.State != hildb.Closed || len(got.Steps) != 2 {
		t.Errorf("after the deadline: state %s steps %v", got.State, stepNames(got))
	}
}

func TestEscalationSurvivesRestart(t *testing.T) {
	e := newEnv(t)
	id := e.confirm("still there?")
	e.clock.Advance(300 * time.Second)
	if got := e.pending(id).EscalationLevel; got != 2 {
		t.Fatalf("level = %d, want 2", got)
	}
	e.close()
	e.clock.Advance(100 * time.Second)
	e.open()
	r := e.pending(id)
	if r.EscalationLevel != 2 {
		t.Fatalf("level after restart = %d, want 2", r.EscalationLevel)
	}
	e.clock.Advance(199 * time.Second)
	if got := e.pending(id).EscalationLevel; got != 2 {
		t.Fatalf("level 299 s into level 2 = %d, want 2", got)
	}
	e.clock.Advance(time.Second)
	if got := e.pending(id).EscalationLevel; got != 3 {
		t.Fatalf("level after level 2's deadline = %d, want 3", got)
	}
	got, err := e.m.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if want := []string{"created@1", "escalated@2", "escalated@3"}; !slices.Equal(stepNames(got), want) {
		t.Errorf("steps = %v, want %v", stepNames(got), want)
	}
}

func TestLevelsAndPayloadDeadline(t *testing.T) {
	clock := newFakeClock()
	deadline := clock.Now().Add(30 * time.Second)
	ask := agent.Handler{
		Type: wire.SupportedTaskType{Type: "ask-by"},
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			_, err := r.AskHuman(ctx, agent.HumanRequest{Reason: wire.Reason{Code: "policy", Message: "decide by the deadline"}, Deadline: deadline})
			return "approved", err
		},
	}
	e := newEnvOpts(t, clock, []agent.Handler{ask}, hil.Options{Config: hil.Config{Levels: []hil.Level{
		{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 60},
		{ReviewersScope: auth.ScopeHILL2, DeadlineSeconds: 120},
	}}})
	t.Run("configured deadline", func(t *testing.T) {
		id := e.confirm("short levels?")
		r := e.pending(id)
		if r.Levels != 2 || r.Deadline != wire.FormatTime(e.clock.Now().Add(60*time.Second)) {
			t.Fatalf("request = %d levels, deadline %s; want 2, now+60s", r.Levels, r.Deadline)
		}
		e.clock.Advance(60 * time.Second)
		if r := e.pending(id); r.EscalationLevel != 2 || r.Deadline != wire.FormatTime(e.clock.Now().Add(120*time.Second)) {
			t.Fatalf("after 60 s: level %d deadline %s; want 2, now+120s", r.EscalationLevel, r.Deadline)
		}
		e.clock.Advance(120 * time.Second)
		e.waitStatus(id, wire.StatusRejected)
	})
	t.Run("payload deadline", func(t *testing.T) {
		deadline = e.clock.Now().Add(30 * time.Second)
		task, err := e.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "ask-by", Payload: wire.JSONValue(`{}`)}, agent.SubmitOptions{})
		if err != nil {
			t.Fatalf("Submit: %v", err)
		}
		e.waitStatus(task.ID, wire.StatusNeedHuman)
		if err := e.m.Sync(context.Background()); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		if r := e.pending(task.ID); r.Deadline != wire.FormatTime(deadline) || r.Reason.Code != "policy" {
			t.Fatalf("request deadline %s reason %+v; want the payload's %s", r.Deadline, r.Reason, wire.FormatTime(deadline))
		}
		e.clock.Advance(30 * time.Second)
		if got := e.pending(task.ID).EscalationLevel; got != 2 {
			t.Fatalf("level after the payload's deadline = %d, want 2", got)
		}
	})
}

func TestSubscribeResume(t *testing.T) {
	e := newEnv(t)
	sub, _, ok := e.m.Subscribe(0, false)
	if !ok {
		t.Fatalf("fresh subscription not ok")
	}
	defer sub.Close()
	e.confirm("one?")
	e.confirm("two?")
	var ids []uint64
	for len(ids) < 2 {
		select {
		case ev := <-sub.C:
			ids = append(ids, ev.ID)
		case <-time.After(pollTimeout):
			t.Fatalf("got %d events, want 2", len(ids))
		}
	}
	if ids[1] != ids[0]+1 {
		t.Fatalf("ids %v are not consecutive", ids)
	}
	t.Run("after the first", func(t *testing.T) {
		s, replay, ok := e.m.Subscribe(ids[0], true)
		defer s.Close()
		if !ok || len(replay) != 1 || replay[0].ID != ids[1] || replay[0].Change != hil.ChangeCreated {
			t.Errorf("replay = %v ok %v, want the second event", replay, ok)
		}
	})
	t.Run("up to date", func(t *testing.T) {
		s, replay, ok := e.m.Subscribe(ids[1], true)
		defer s.Close()
		if !ok || len(replay) != 0 {
			t.Errorf("replay = %v ok %v, want none, ok", replay, ok)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		for _, after := range []uint64{1, ids[1] + 10} {
			s, _, ok := e.m.Subscribe(after, true)
			s.Close()
			if ok {
				t.Errorf("Subscribe(%d) ok, want a reset", after)
			}
		}
	})
}
