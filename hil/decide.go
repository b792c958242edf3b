package hil

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Decide applies p's decision to the pending request of task id through
// agent.Agent.Decide: approve, reject, or modify (approve with
// approved_fields, which must not be empty). p must hold the reviewers
// scope of the request's current level (admin always does). A request that
// is already decided or closed is a conflict (409); a task without a
// request is not found (404).
//
// The action escalate does not decide: it hands the request to the next
// escalation level (a second reviewer), the task going need_human →
// human_deciding → need_human (agent.Agent.HandOver); at the last level
// it is a conflict.
func (m *Manager) Decide(ctx context.Context, p auth.Principal, id string, req agent.DecisionRequest) (*Request, error) {
	switch req.Action {
	case agent.ActionApprove, agent.ActionReject, ActionEscalate:
	case agent.ActionModify:
		if len(req.ApprovedFields) == 0 {
			return nil, wire.Errorf(wire.CodeInvalidParams, "modify needs approved_fields: the fields to change").With("field", "approved_fields")
		}
	default:
		return nil, wire.Errorf(wire.CodeInvalidParams, "action must be approve, reject, modify or escalate").With("field", "action")
	}
	if err := m.Sync(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	e := m.pending[id]
	if e == nil {
		m.mu.Unlock()
		return nil, m.notPending(id)
	}
	level := e.rec.Level
	scope := m.levels[level-1].ReviewersScope
	if !p.Can(scope) {
		m.mu.Unlock()
		return nil, wire.Errorf(wire.CodePermissionDenied, "the request of task %s is at escalation level %d: deciding needs the %q scope", id, level, scope).
			With("task_id", id).With("escalation_level", level).With("scope", string(scope))
	}
	if e.busy {
		m.mu.Unlock()
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "a decision on task %s is being applied", id).With("task_id", id)
	}
	if req.Action == ActionEscalate && level >= len(m.levels) {
		m.mu.Unlock()
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "the request of task %s is at the last escalation level (%d): decide it", id, level).
			With("task_id", id).With("escalation_level", level)
	}
	e.busy = true
	m.mu.Unlock()
	if req.Action == ActionEscalate {
		return m.handOver(ctx, e, p, req, level)
	}
	return m.apply(ctx, e, p, req, level)
}

// ActionEscalate hands a request to the next escalation level.
const ActionEscalate = "escalate"

// handOver runs the escalate action on e, which the caller marked busy:
// the task records the hand-over, the request moves to the next level.
func (m *Manager) handOver(ctx context.Context, e *entry, p auth.Principal, req agent.DecisionRequest, level int) (*Request, error) {
	id := e.rec.TaskID
	t, err := m.a.HandOver(ctx, p, id, level+1, req.Notes)
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e.busy = false
	if err != nil {
		return nil, err
	}
	why := fmt.Sprintf("handed to level %d by %s", level+1, p.ID)
	if req.Notes != "" {
		why += ": " + req.Notes
	}
	closed, created := m.closeChange(e.rec, now, why), m.createChange(t, enteredAt(t), now)
	if err := m.save(m.bg, closed, created); err != nil {
		return nil, err
	}
	m.install(closed)
	m.install(created)
	return view(created.rec, m.levels), nil
}

// notPending explains why a task has no pending request.
func (m *Manager) notPending(id string) error {
	var rec *hildb.Request
	err := m.db.View(func(tx *store.Tx) error {
		var err error
		rec, err = hildb.GetRequest(tx, id)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		t, err := m.a.Task(id)
		if err != nil {
			return err
		}
		return wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s: it does not wait for a person", id, t.Status).
			With("task_id", id).With("status", t.Status)
	case err != nil:
		return wire.Errorf(wire.CodeSysStorage, "read request: %v", err)
	case rec.Decision != nil:
		d := rec.Decision
		return wire.Errorf(wire.CodeInvalidStateChange, "the request of task %s was already decided: %s by %s", id, d.Action, d.DecidedBy).
			With("task_id", id).With("state", rec.State)
	}
	return wire.Errorf(wire.CodeInvalidStateChange, "the request of task %s is %s: %s", id, rec.State, rec.Note).
		With("task_id", id).With("state", rec.State)
}

// apply runs a decision on e, which the caller marked busy, and records
// the outcome.
func (m *Manager) apply(ctx context.Context, e *entry, p auth.Principal, req agent.DecisionRequest, level int) (*Request, error) {
	id := e.rec.TaskID
	auto := p.ID == SystemActor
	what := fmt.Sprintf("hil: %s by %s at level %d", req.Action, p.ID, level)
	if auto {
		what = fmt.Sprintf("hil: default action %s applied after the deadline of level %d", req.Action, level)
	}
	m.a.NoteTask(id, what) // before: a decided task may be final at once
	t, derr := m.a.Decide(ctx, p, id, req)
	now := m.clock.Now()

	m.mu.Lock()
	defer m.mu.Unlock()
	e.busy = false
	if derr != nil {
		step := &hildb.Step{TaskID: id, At: now, Step: StepDecisionFailed, Level: level, Actor: p.ID, Action: req.Action, Detail: derr.Error()}
		if err := m.save(m.bg, change{steps: []*hildb.Step{step}}); err != nil {
			m.log.Error("record failed decision", "task_id", id, "err", err)
		}
		m.a.NoteTask(id, "hil: the decision was not applied: "+derr.Error())
		if auto {
			m.log.Error("apply the default action", "task_id", id, "action", req.Action, "err", derr)
		}
		if e.expired && !m.closed && m.pending[id] == e {
			e.expired = false
			m.arm(e) // the deadline passed meanwhile: act on it now
		}
		return nil, derr
	}
	rec := *e.rec
	rec.State, rec.ClosedAt = hildb.Decided, now
	rec.Decision = &hildb.Decision{
		Action: req.Action, DecidedBy: p.ID, DecidedByName: p.Name, Level: level,
		ApprovedFields: maps.Clone(req.ApprovedFields), RejectionReason: req.RejectionReason, Notes: req.Notes,
		At: now, TaskStatus: t.Status,
	}
	step := StepDecided
	if auto {
		step = StepDefaultApplied
	}
	c := change{
		rec:   &rec,
		steps: []*hildb.Step{{TaskID: id, At: now, Step: step, Level: level, Actor: p.ID, Action: req.Action, Detail: decisionDetail(req)}},
		event: ChangeDecided,
	}
	if err := m.save(m.bg, c); err != nil {
		// The decision took effect; only its record is missing.
		m.log.Error("record decision", "task_id", id, "err", err)
	}
	m.install(c)
	return view(&rec, m.levels), nil
}

func decisionDetail(req agent.DecisionRequest) string {
	s := ""
	if len(req.ApprovedFields) > 0 {
		s = fmt.Sprintf("approved_fields %v", req.ApprovedFields)
	}
	for _, x := range []string{req.RejectionReason, req.Notes} {
		if x != "" {
			if s != "" {
				s += "; "
			}
			s += x
		}
	}
	return s
}
