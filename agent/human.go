package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// Human intervention (seed 004 §4.3): a handler asks a person and waits;
// the task sits in need_human until a decision arrives, from a person on
// this agent or, for a task a peer asked for, as the peer's
// p2p:human_decision.

// Decision actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionModify  = "modify"
)

// ErrHumanRejected is returned by AskHuman when the person rejected; a
// handler that returns it ends its task rejected.
var ErrHumanRejected = errors.New("a person rejected the task")

// HumanRequest is what a handler asks a person.
type HumanRequest struct {
	Reason  wire.Reason
	Summary string
	Options []wire.HumanOption
	// Deadline is informational for now: it is shown to the person.
	Deadline time.Time
}

// AskHuman parks the task in need_human until a person decides and returns
// the decision; on reject it returns ErrHumanRejected with the decision.
func (r *Run) AskHuman(ctx context.Context, req HumanRequest) (*wire.HumanDecisionPayload, error) {
	return r.e.askHuman(ctx, r.id, req)
}

func (e *engine) askHuman(ctx context.Context, id string, req HumanRequest) (*wire.HumanDecisionPayload, error) {
	// A sync-mode task is stored (and becomes live) once its handler has
	// run for inlineBudget; a handler that asks a person waits for that
	// (signalled by e.added), a bounded time.
	var limit *time.Timer
	r := e.live(id)
	for r == nil {
		added := e.added.wait() // before live: no addition is missed
		if r = e.live(id); r != nil {
			break
		}
		if limit == nil {
			limit = time.NewTimer(50 * inlineBudget)
			defer limit.Stop()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-limit.C:
			return nil, fmt.Errorf("task %s is not running", id)
		case <-added:
		}
	}
	e.unfoldLive(id) // need_human follows executing (engine_fold.go)
	ch := make(chan *wire.HumanDecisionPayload, 1)
	r.mu.Lock()
	if pre := r.preDecided; pre != nil {
		// The decision came after a restart, before this run of the
		// handler asked again: it is the answer.
		r.preDecided = nil
		r.mu.Unlock()
		if pre.Decision.Action == ActionReject {
			return pre, ErrHumanRejected
		}
		return pre, nil
	}
	r.decision = ch
	r.mu.Unlock()
	err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		h := &wire.TaskNeedHumanPayload{TaskID: t.ID, Reason: req.Reason, Options: req.Options, EscalationLevel: 1,
			Context: &wire.HumanContext{TaskSummary: req.Summary, CurrentProgress: t.Progress, BlockedReason: req.Reason.Message}}
		if !req.Deadline.IsZero() {
			h.Deadline = wire.FormatTime(req.Deadline)
		}
		t.Human = h
		return e.transition(t, wire.StatusNeedHuman, now, req.Reason.Message)
	})
	if err != nil {
		return nil, err
	}
	select {
	case d := <-ch:
		return e.recordDecision(r, d)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-e.stopping:
		// The agent stops: the task waits in need_human, stored, and the
		// decision resumes it after the restart (recover parks it).
		r.cancel(errShutdown) // set by arm before the handler started
		return nil, errShutdown
	}
}

// recordDecision moves a task out of need_human after the decision d and
// returns it to the handler (ErrHumanRejected on reject).
func (e *engine) recordDecision(r *run, d *wire.HumanDecisionPayload) (*wire.HumanDecisionPayload, error) {
	approved := d.Decision.Action != ActionReject
	err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		t.Human = nil
		evs, err := e.toDeciding(t, now, d.DecidedBy.UserID)
		if err != nil {
			return nil, err
		}
		if !approved {
			more, err := e.transition(t, wire.StatusHumanRejected, now, "rejected by "+d.DecidedBy.UserID)
			return append(evs, more...), err
		}
		more, err := e.transition(t, wire.StatusHumanApproved, now, d.Decision.Action+" by "+d.DecidedBy.UserID)
		if err != nil {
			return nil, err
		}
		evs = append(evs, more...)
		more, err = e.transition(t, wire.StatusExecuting, now, "resumed after the decision")
		return append(evs, more...), err
	})
	if err != nil {
		return nil, err
	}
	if !approved {
		return d, ErrHumanRejected
	}
	return d, nil
}

// DecisionRequest is a person's answer to a task in need_human.
type DecisionRequest struct {
	Action          string         `json:"action" msgpack:"action"`
	ApprovedFields  map[string]any `json:"approved_fields,omitempty" msgpack:"approved_fields,omitempty"`
	RejectionReason string         `json:"rejection_reason,omitempty" msgpack:"rejection_reason,omitempty"`
	Notes           string         `json:"notes,omitempty" msgpack:"notes,omitempty"`
}

// Decide records a person's decision on a task in need_human. For a task
// delegated to a peer it is sent as p2p:human_decision.
func (a *Agent) Decide(ctx context.Context, p auth.Principal, id string, req DecisionRequest) (*wire.Task, error) {
	switch req.Action {
	case ActionApprove, ActionReject, ActionModify:
	default:
		return nil, wire.Errorf(wire.CodeInvalidParams, "action must be approve, reject or modify").With("field", "action")
	}
	r := a.eng.live(id)
	if r == nil {
		if _, err := a.eng.get(id); err != nil {
			return nil, err
		}
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is not waiting for a person", id)
	}
	cur := r.snapshot()
	if cur.Status != wire.StatusNeedHuman && cur.Status != wire.StatusHumanDeciding {
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not need_human", id, cur.Status)
	}
	did, _ := uuid.NewV7()
	d := &wire.HumanDecisionPayload{
		TaskID: id, DecisionID: did.String(),
		DecidedBy: wire.DecidedBy{UserID: p.ID, UserName: p.Name, Role: "reviewer"},
		Decision:  wire.Decision{Action: req.Action, ApprovedFields: req.ApprovedFields, RejectionReason: req.RejectionReason},
		Notes:     req.Notes, Timestamp: wire.FormatTime(a.clock.Now()),
	}
	if cur.Target != "" {
		if err := a.eng.decideRemote(r, d); err != nil {
			return nil, err
		}
		return a.eng.get(id)
	}
	r.mu.Lock()
	waiting := r.decision != nil
	r.mu.Unlock()
	if !waiting && r.cancel == nil {
		if cur.Human != nil && cur.Human.Reason.Code == approvalCode {
			// Held by the approval policy: no handler runs yet.
			if err := a.eng.decideApproval(r, d); err != nil {
				return nil, err
			}
		} else if err := a.eng.decideResume(r, d); err != nil {
			// A handler asked before a restart and is gone.
			return nil, err
		}
		return a.eng.get(id)
	}
	// The handler records the outcome; wait briefly (on the task's events)
	// so that the answer shows it.
	sub := a.eng.hub.Subscribe(id)
	defer sub.Close()
	if err := a.eng.deliverDecision(r, d); err != nil {
		return nil, err
	}
	limit := time.NewTimer(2 * time.Second)
	defer limit.Stop()
	for r.snapshot().Status == wire.StatusNeedHuman {
		select {
		case _, ok := <-sub.C:
			if !ok { // the subscription lagged or the agent closes
				return a.eng.get(id)
			}
		case <-r.done:
			return a.eng.get(id)
		case <-limit.C:
			return a.eng.get(id)
		}
	}
	return a.eng.get(id)
}

func (e *engine) deliverDecision(r *run, d *wire.HumanDecisionPayload) error {
	r.mu.Lock()
	ch := r.decision
	r.decision = nil
	r.mu.Unlock()
	if ch == nil {
		return wire.Errorf(wire.CodeInvalidStateChange, "task %s has no handler waiting for a decision", d.TaskID)
	}
	ch <- d
	return nil
}

// decideResume records a decision on a task whose handler asked a person
// before the agent restarted: the handler is run again from the start, and
// its AskHuman returns this decision at once; on reject the task ends
// rejected without running.
func (e *engine) decideResume(r *run, d *wire.HumanDecisionPayload) error {
	return e.decideHeld(r, d, wire.StatusExecuting, "the handler runs again with the decision", false)
}

// decideRemote records the decision on a delegated task and sends it.
func (e *engine) decideRemote(r *run, d *wire.HumanDecisionPayload) error {
	return e.applyOut(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, []Outgoing, error) {
		if t.Status != wire.StatusNeedHuman && t.Status != wire.StatusHumanDeciding {
			return nil, nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not need_human", t.ID, t.Status)
		}
		to := wire.StatusHumanApproved
		if d.Decision.Action == ActionReject {
			to = wire.StatusHumanRejected
		}
		if t.Human != nil {
			d.ReplyTo = t.Human.TaskID
		}
		t.Human = nil
		evs, err := e.toDeciding(t, now, d.DecidedBy.UserID)
		if err != nil {
			return nil, nil, err
		}
		more, err := e.transition(t, to, now, d.Decision.Action+" by "+d.DecidedBy.UserID)
		return append(evs, more...), []Outgoing{{Peer: t.Target, Type: wire.MsgHumanDecision, Payload: d}}, err
	})
}

// remoteDecision handles a peer's p2p:human_decision for a task it asked
// for, refused as POST /task/{id}/decision refuses it when the task does
// not wait for a person (409 invalid_state_transition).
func (e *engine) remoteDecision(peer string, d *wire.HumanDecisionPayload) error {
	if _, err := e.requested(peer, d.TaskID); err != nil {
		return err
	}
	switch d.Decision.Action {
	case ActionApprove, ActionReject, ActionModify:
	default:
		return wire.Errorf(wire.CodeMessageFormatInvalid, "decision.action %q is not approve, reject or modify", d.Decision.Action).
			With("field", "decision.action")
	}
	r := e.live(d.TaskID)
	if r == nil {
		return wire.Errorf(wire.CodeInvalidStateChange, "task %s is not waiting for a person", d.TaskID).With("task_id", d.TaskID)
	}
	cur := r.snapshot()
	if cur.Status != wire.StatusNeedHuman && cur.Status != wire.StatusHumanDeciding {
		return wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not need_human", d.TaskID, cur.Status).
			With("task_id", d.TaskID).With("status", cur.Status)
	}
	r.mu.Lock()
	waiting, running := r.decision != nil, r.cancel != nil
	r.mu.Unlock()
	if !waiting && !running {
		return e.decideResume(r, d) // the handler asked before a restart
	}
	return e.deliverDecision(r, d)
}
