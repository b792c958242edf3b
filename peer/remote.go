package peer

import (
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Delegation between agents (seed 004 §4), the network's side. The
// engine keeps the state of a delegated task (one with a target, which
// never runs here) and of a task a peer asked for (one with an origin);
// every change of them reaches Changed inside the store transaction of the
// change, which queues the p2p:* message the peer must hear of, so a crash
// can lose neither.

// Changed queues, inside tx, what the change of a task from prev (nil: the
// task is being created) to next announces: the messages for the peer of
// a delegated task or of a task a peer asked for, and the webhook callback
// of a task with a callback_url that reached a final state (the agent
// calls it for every change).
func (n *Network) Changed(tx *store.Tx, prev, next *wire.Task) error {
	var out []agent.Outgoing
	if next.Target != "" || next.Origin != nil {
		out = outgoingFor(prev, next, n.maxTaskDuration)
	}
	if next.CallbackURL != "" && next.Status.Terminal() && (prev == nil || !prev.Status.Terminal()) {
		out = append(out, agent.Outgoing{URL: next.CallbackURL, Type: WebhookType, Payload: next.StatusResponse(true)})
	}
	for _, m := range out {
		if err := n.Enqueue(tx, m); err != nil {
			return err
		}
	}
	return nil
}

// outgoingFor derives the messages a change from prev (nil: the task is
// being created) to next announces to the peer of a delegated task or of a
// task a peer asked for.
// maxDuration is the agent's max_task_duration_seconds, which bounds how
// long a handler that asks a person waits.
func outgoingFor(prev, next *wire.Task, maxDuration func() time.Duration) []agent.Outgoing {
	added, prevProgress := next.History, 0
	if prev != nil {
		added, prevProgress = next.History[len(prev.History):], prev.Progress
	}
	var out []agent.Outgoing
	switch {
	case next.Target != "":
		for _, tr := range added {
			if isNote(tr) {
				continue // waiting_for_peer (pairing.go)
			}
			switch tr.Status {
			case wire.StatusPending:
				spec := wire.TaskSpec{ID: next.ID, Type: next.Type, Priority: next.Priority, Payload: next.Payload}
				if !next.Deadline.IsZero() {
					spec.Deadline = wire.FormatTime(next.Deadline)
				}
				// This agent's outbox is a bounded queue already (its
				// retries): it asks the peer to wait for a slot.
				out = append(out, agent.Outgoing{Peer: next.Target, Type: wire.MsgTaskRequest, Payload: &wire.TaskRequestPayload{Task: spec,
					Context: &wire.TaskContext{Metadata: map[string]any{agent.QueueWhenBusy: true}}}})
			case wire.StatusCompleted, wire.StatusFailed, wire.StatusRejected:
				out = append(out, agent.Outgoing{Peer: next.Target, Type: wire.MsgTaskAck, Payload: &wire.TaskAckPayload{
					TaskID: next.ID, AckedType: ackedType(tr.Status), Status: tr.Status,
				}})
			}
		}
	case next.Origin != nil:
		peer, corr := next.Origin.Peer, next.Origin.MessageID
		for _, tr := range added {
			if tr.Status == wire.StatusPending {
				continue // the requester's own first state: nothing to tell
			}
			out = append(out, agent.Outgoing{Peer: peer, CorrelationID: corr, Type: "", Payload: nil})
			m := &out[len(out)-1]
			switch tr.Status {
			case wire.StatusConfirmed:
				m.Type, m.Payload = wire.MsgTaskConfirm, &wire.TaskConfirmPayload{TaskID: next.ID, Confirmed: true, CapabilitiesUsed: []string{next.Type}}
			case wire.StatusRejected:
				m.Type, m.Payload = wire.MsgTaskReject, &wire.TaskRejectPayload{TaskID: next.ID,
					Reason: wire.Reason{Code: next.ErrorCode, Message: next.ErrorMessage, Details: numericDetails(next.ErrorCode)}}
				if next.ErrorCode == wire.CodeRateLimited {
					m.Payload.(*wire.TaskRejectPayload).Alternatives = &wire.Alternatives{RetryAfter: agent.BusyRetryAfterSeconds}
				}
			case wire.StatusInfoNeeded:
				m.Type, m.Payload = wire.MsgTaskNeedInfo, &wire.TaskNeedInfoPayload{TaskID: next.ID, MissingFields: next.MissingFields,
					Question: "the payload is missing required fields"}
			case wire.StatusNeedHuman:
				m.Type, m.Payload = wire.MsgTaskNeedHuman, needHuman(next, maxDuration())
			case wire.StatusCompleted:
				m.TaskType = next.Type
				m.Type, m.Payload = wire.MsgTaskComplete, &wire.TaskCompletePayload{TaskID: next.ID,
					Result: wire.TaskResult{OutputType: "json", Output: next.Result}, Summary: "task completed"}
			case wire.StatusFailed:
				m.Type, m.Payload = wire.MsgTaskFailed, &wire.TaskFailedPayload{TaskID: next.ID,
					Error: wire.TaskError{Code: next.ErrorCode, Message: next.ErrorMessage, Recoverable: next.Recoverable, Details: numericDetails(next.ErrorCode)}}
			case wire.StatusCancelled:
				m.Type, m.Payload = wire.MsgTaskAck, &wire.TaskAckPayload{TaskID: next.ID, AckedType: wire.MsgTaskCancel, Status: wire.StatusCancelled}
			default:
				m.Type, m.Payload = wire.MsgTaskStatusUpdate, &wire.TaskStatusUpdatePayload{TaskID: next.ID, Status: tr.Status,
					Progress: next.Progress, Message: tr.Reason}
			}
		}
		if len(added) == 0 && next.Progress != prevProgress && next.Status == wire.StatusExecuting {
			out = append(out, agent.Outgoing{Peer: peer, CorrelationID: corr, Type: wire.MsgTaskStatusUpdate,
				Payload: &wire.TaskStatusUpdatePayload{TaskID: next.ID, Status: next.Status, Progress: next.Progress}})
		}
	}
	return out
}

// needHuman is the p2p:task_need_human of t, which waits for a person,
// with the deadline and options of seed 004 §6.8 filled in when the
// request named none: the deadline is when the task stops waiting by
// itself — the earliest of its deadline (the request's task.deadline),
// its ttl and, for a handler that asks while it runs, the end of its
// maximum duration — and the options are the decision's actions, approve
// and reject.
func needHuman(t *wire.Task, maxDuration time.Duration) *wire.TaskNeedHumanPayload {
	h := &wire.TaskNeedHumanPayload{TaskID: t.ID, EscalationLevel: 1}
	if t.Human != nil {
		c := *t.Human
		h = &c
	}
	if h.Deadline == "" {
		var d time.Time
		earliest := func(at time.Time) {
			if !at.IsZero() && (d.IsZero() || at.Before(d)) {
				d = at
			}
		}
		earliest(t.Deadline)
		if t.TTLSeconds > 0 {
			earliest(t.CreatedAt.Add(time.Duration(t.TTLSeconds) * time.Second))
		}
		if !t.StartedAt.IsZero() {
			earliest(t.StartedAt.Add(maxDuration))
		}
		if !d.IsZero() {
			h.Deadline = wire.FormatTime(d)
		}
	}
	if len(h.Options) == 0 {
		h.Options = []wire.HumanOption{
			{Field: "action", Value: "approve", ProsCons: "the task goes on"},
			{Field: "action", Value: "reject", ProsCons: "the task ends rejected"},
		}
	}
	return h
}

// maxTaskDuration is the agent's max_task_duration_seconds.
func (n *Network) maxTaskDuration() time.Duration {
	cfg := n.a.Config()
	return cfg.TaskDuration()
}

// WebhookType is the Type of a callback to a plain webhook: the task's
// TaskStatusResponse as JSON, signed with X-Synapse-Signature.
const WebhookType = "webhook"

// numericDetails is the details of a reject or failure with code: its
// numeric code when it has one (seed 000 §2.2), else none (an untyped nil,
// so that the field is left out).
func numericDetails(code wire.ErrorCode) any {
	if d := wire.NumericDetails(code); d != nil {
		return d
	}
	return nil
}

func ackedType(s wire.Status) wire.MessageType {
	switch s {
	case wire.StatusCompleted:
		return wire.MsgTaskComplete
	case wire.StatusFailed:
		return wire.MsgTaskFailed
	}
	return wire.MsgTaskReject
}

// isNote tells a history note (waiting_for_peer) from a transition.
func isNote(tr wire.Transition) bool { return tr.From == tr.Status }
