package agent

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/wire"
)

// Approval policy (SPEC §9): tasks the config lists wait in need_human
// before they run. A person's approve (or modify, whose approved_fields
// are merged into the payload) runs the task; reject ends it rejected.

// approvalCode is the reason code of requests the policy makes.
const approvalCode = "approval_required"

// approvalFor returns the rule a submission matches, or nil.
func (e *engine) approvalFor(req *wire.SubmitRequest) *ApprovalRule {
	rules := e.a.cfg.Load().Approvals
	for i := range rules {
		r := &rules[i]
		if r.TaskType != req.TaskType {
			continue
		}
		if r.Field == "" {
			return r
		}
		var p map[string]json.RawMessage
		if json.Unmarshal(req.Payload, &p) != nil {
			continue
		}
		if v, ok := p[r.Field]; ok && jsonEqual(v, r.Equals) {
			return r
		}
	}
	return nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// approvalRequest is the need_human payload of a policy.
func approvalRequest(t *wire.Task, rule *ApprovalRule) *wire.TaskNeedHumanPayload {
	reason := rule.Reason
	if reason == "" {
		reason = "approval required by policy"
	}
	return &wire.TaskNeedHumanPayload{
		TaskID:          t.ID,
		Reason:          wire.Reason{Code: approvalCode, Message: reason},
		Context:         &wire.HumanContext{TaskSummary: "run " + t.Type + " with payload " + summarize(t.Payload), BlockedReason: reason},
		EscalationLevel: 1,
	}
}

// summaryBytes bounds the payload quoted in a request's summary: the
// request stays in memory while the task waits, the payload on disk.
const summaryBytes = 512

// summarize quotes a payload up to summaryBytes, cut on a rune boundary.
func summarize(p wire.JSONValue) string {
	if len(p) <= summaryBytes {
		return string(p)
	}
	n := summaryBytes
	for n > 0 && !utf8.RuneStart(p[n]) {
		n--
	}
	return string(p[:n]) + "… (" + strconv.Itoa(len(p)) + " bytes)"
}

// decideApproval applies a decision to a task held by the policy: approve
// (or modify, whose approved_fields are merged into the payload) queues it
// to run; reject ends it.
func (e *engine) decideApproval(r *run, d *wire.HumanDecisionPayload) error {
	return e.decideHeld(r, d, wire.StatusConfirmed, "approved", true)
}

// decideHeld applies a decision to a task that waits in need_human with no
// handler waiting for it: on approve it goes on to next (confirmed for the
// policy, executing for a handler that asked before a restart) and starts;
// on reject it ends rejected without running.
func (e *engine) decideHeld(r *run, d *wire.HumanDecisionPayload, next wire.Status, reason string, mergeFields bool) error {
	approved := d.Decision.Action != ActionReject
	if approved {
		if err := e.acquire(true); err != nil {
			return err
		}
	}
	err := e.apply(r, true, func(t *wire.Task, now time.Time) ([]*wire.Event, error) {
		if t.Status != wire.StatusNeedHuman && t.Status != wire.StatusHumanDeciding {
			return nil, wire.Errorf(wire.CodeInvalidStateChange, "task %s is %s, not need_human", t.ID, t.Status)
		}
		t.Human = nil
		by := d.DecidedBy.UserID
		deciding, err := e.toDeciding(t, now, by)
		if err != nil {
			return nil, err
		}
		if !approved {
			t.ErrorCode, t.ErrorMessage = wire.CodePermissionDenied, "a person rejected the task"
			if d.Decision.RejectionReason != "" {
				t.ErrorMessage += ": " + d.Decision.RejectionReason
			}
			evs, err := e.transition(t, wire.StatusHumanRejected, now, "rejected by "+by)
			if err != nil {
				return nil, err
			}
			more, err := e.transition(t, wire.StatusRejected, now, t.ErrorMessage)
			return append(append(deciding, evs...), more...), err
		}
		if mergeFields && len(d.Decision.ApprovedFields) > 0 {
			var p map[string]any
			_ = json.Unmarshal(t.Payload, &p)
			if p == nil {
				p = map[string]any{}
			}
			for k, v := range d.Decision.ApprovedFields {
				p[k] = v
			}
			b, err := json.Marshal(p)
			if err != nil {
				return nil, wire.Errorf(wire.CodeInvalidParams, "approved_fields: %v", err)
			}
			t.Payload = b
		}
		evs, err := e.transition(t, wire.StatusHumanApproved, now, d.Decision.Action+" by "+by)
		if err != nil {
			return nil, err
		}
		more, err := e.transition(t, next, now, reason)
		return append(append(deciding, evs...), more...), err
	})
	if err != nil {
		if approved {
			e.acquireUndo()
		}
		return err
	}
	if !approved {
		e.a.m.finished.With(string(wire.StatusRejected)).Add(1)
		e.untrack(r)
		return nil
	}
	r.mu.Lock()
	r.slot = true
	if next == wire.StatusExecuting {
		r.preDecided = d
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	e.start(r)
	return nil
}
