package hil

import (
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/wire"
)

// Request is a request for a person as the API shows it.
type Request struct {
	TaskID   string `json:"task_id" msgpack:"task_id"`
	TaskType string `json:"task_type" msgpack:"task_type"`
	// Target is the peer a delegated task runs on; empty for local tasks.
	Target string `json:"target,omitempty" msgpack:"target,omitempty"`
	// State is pending, decided or closed.
	State   string             `json:"state" msgpack:"state"`
	Reason  wire.Reason        `json:"reason" msgpack:"reason"`
	Context *wire.HumanContext `json:"context,omitempty" msgpack:"context,omitempty"`
	Options []wire.HumanOption `json:"options,omitempty" msgpack:"options,omitempty"`
	// EscalationLevel is the current level (1-based) of Levels.
	EscalationLevel int `json:"escalation_level" msgpack:"escalation_level"`
	Levels          int `json:"levels" msgpack:"levels"`
	// ReviewersScope is the scope that may decide at the current level.
	ReviewersScope auth.Scope `json:"reviewers_scope" msgpack:"reviewers_scope"`
	// Deadline is when the current level ends.
	Deadline  string    `json:"deadline" msgpack:"deadline"`
	CreatedAt string    `json:"created_at" msgpack:"created_at"`
	ClosedAt  string    `json:"closed_at,omitempty" msgpack:"closed_at,omitempty"`
	Note      string    `json:"note,omitempty" msgpack:"note,omitempty"`
	Decision  *Decision `json:"decision,omitempty" msgpack:"decision,omitempty"`
	// Steps is the audit trail; only Get fills it.
	Steps []Step `json:"steps,omitempty" msgpack:"steps,omitempty"`
}

// Decision is how a request was decided.
type Decision struct {
	Action          string         `json:"action" msgpack:"action"`
	DecidedBy       string         `json:"decided_by" msgpack:"decided_by"`
	DecidedByName   string         `json:"decided_by_name,omitempty" msgpack:"decided_by_name,omitempty"`
	Level           int            `json:"level" msgpack:"level"`
	ApprovedFields  map[string]any `json:"approved_fields,omitempty" msgpack:"approved_fields,omitempty"`
	RejectionReason string         `json:"rejection_reason,omitempty" msgpack:"rejection_reason,omitempty"`
	Notes           string         `json:"notes,omitempty" msgpack:"notes,omitempty"`
	DecidedAt       string         `json:"decided_at" msgpack:"decided_at"`
	// TaskStatus is the task's state right after the decision.
	TaskStatus wire.Status `json:"task_status,omitempty" msgpack:"task_status,omitempty"`
}

// Step is one entry of a request's audit trail.
type Step struct {
	Seq    uint64 `json:"seq" msgpack:"seq"`
	At     string `json:"at" msgpack:"at"`
	Step   string `json:"step" msgpack:"step"`
	Level  int    `json:"level,omitempty" msgpack:"level,omitempty"`
	Actor  string `json:"actor,omitempty" msgpack:"actor,omitempty"`
	Action string `json:"action,omitempty" msgpack:"action,omitempty"`
	Detail string `json:"detail,omitempty" msgpack:"detail,omitempty"`
}

// Steps of the audit trail.
const (
	StepCreated        = "created"
	StepEscalated      = "escalated"
	StepNotified       = "notified"
	StepNotifyFailed   = "notify_failed"
	StepDecided        = "decided"
	StepDefaultApplied = "default_applied"
	StepDecisionFailed = "decision_failed"
	StepClosed         = "closed"
)

// Changes an Event reports.
const (
	ChangeCreated   = "created"
	ChangeEscalated = "escalated"
	ChangeDecided   = "decided"
	ChangeClosed    = "closed"
)

// Event is one change of a request: the request as it is after the
// change, and what changed. It is also the body of notifications.
type Event struct {
	// ID increases with every event of this process.
	ID     uint64 `json:"-" msgpack:"-"`
	Change string `json:"change" msgpack:"change"`
	*Request
}

// SystemActor is the principal id that applies the default action when
// the last level's deadline passes.
const SystemActor = "system:escalation"

func systemPrincipal() auth.Principal {
	return auth.Principal{ID: SystemActor, Name: "escalation", Scopes: []auth.Scope{auth.ScopeAdmin}}
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return wire.FormatTime(t)
}

// view renders a stored request with the levels it was escalated through.
func view(r *hildb.Request, levels []Level) *Request {
	v := &Request{
		TaskID: r.TaskID, TaskType: r.TaskType, Target: r.Target, State: r.State,
		EscalationLevel: r.Level, Levels: len(levels),
		Deadline: formatTime(r.Deadline), CreatedAt: formatTime(r.CreatedAt),
		ClosedAt: formatTime(r.ClosedAt), Note: r.Note,
	}
	if r.Level >= 1 && r.Level <= len(levels) {
		v.ReviewersScope = levels[r.Level-1].ReviewersScope
	}
	if h := r.Request; h != nil {
		v.Reason, v.Context, v.Options = h.Reason, h.Context, h.Options
	}
	if d := r.Decision; d != nil {
		v.Decision = &Decision{
			Action: d.Action, DecidedBy: d.DecidedBy, DecidedByName: d.DecidedByName, Level: d.Level,
			ApprovedFields: d.ApprovedFields, RejectionReason: d.RejectionReason, Notes: d.Notes,
			DecidedAt: formatTime(d.At), TaskStatus: d.TaskStatus,
		}
	}
	return v
}

func viewStep(s *hildb.Step) Step {
	return Step{Seq: s.Seq, At: formatTime(s.At), Step: s.Step, Level: s.Level, Actor: s.Actor, Action: s.Action, Detail: s.Detail}
}
