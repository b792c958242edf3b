package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/synapse-edge/synapse/wire"
)

// The scopes of human-in-the-loop reviewers, one per default escalation
// level. Deciding a request needs the scope of its current level (or
// admin); reading needs tasks:read or any of them.
const (
	ScopeHILL1 = wire.ScopeHILL1
	ScopeHILL2 = wire.ScopeHILL2
	ScopeHILL3 = wire.ScopeHILL3
)

// Decision actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	// ActionModify approves with changed fields (ApprovedFields).
	ActionModify = "modify"
	// ActionEscalate does not decide: it hands the request to the next
	// escalation level's reviewers.
	ActionEscalate = "escalate"
)

// HILRequest is a task's request for a person (GET /hil, GET /hil/{id}).
// Times are RFC 3339 text as the agent sent them.
type HILRequest struct {
	TaskID   string `json:"task_id"`
	TaskType string `json:"task_type"`
	// Target is the peer a delegated task runs on.
	Target string `json:"target,omitempty"`
	// State is pending, decided or closed.
	State  string `json:"state"`
	Reason struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"reason"`
	Context *struct {
		TaskSummary     string `json:"task_summary,omitempty"`
		CurrentProgress int    `json:"current_progress"`
		BlockedReason   string `json:"blocked_reason,omitempty"`
	} `json:"context,omitempty"`
	Options         []HILOption  `json:"options,omitempty"`
	EscalationLevel int          `json:"escalation_level"`
	Levels          int          `json:"levels"`
	ReviewersScope  string       `json:"reviewers_scope"`
	Deadline        string       `json:"deadline"`
	CreatedAt       string       `json:"created_at"`
	ClosedAt        string       `json:"closed_at,omitempty"`
	Note            string       `json:"note,omitempty"`
	Decision        *HILDecision `json:"decision,omitempty"`
	// Steps is the audit trail (GET /hil/{id} only).
	Steps []HILStep `json:"steps,omitempty"`
}

// HILOption is one option offered to the person.
type HILOption struct {
	Field      string `json:"field"`
	Value      any    `json:"value"`
	ProsCons   string `json:"pros_cons,omitempty"`
	Confidence int    `json:"confidence,omitempty"`
}

// HILDecision is how a request was decided.
type HILDecision struct {
	Action          string         `json:"action"`
	DecidedBy       string         `json:"decided_by"`
	DecidedByName   string         `json:"decided_by_name,omitempty"`
	Level           int            `json:"level"`
	ApprovedFields  map[string]any `json:"approved_fields,omitempty"`
	RejectionReason string         `json:"rejection_reason,omitempty"`
	Notes           string         `json:"notes,omitempty"`
	DecidedAt       string         `json:"decided_at"`
	TaskStatus      string         `json:"task_status,omitempty"`
}

// HILStep is one entry of a request's audit trail.
type HILStep struct {
	Seq    uint64 `json:"seq"`
	At     string `json:"at"`
	Step   string `json:"step"`
	Level  int    `json:"level,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Action string `json:"action,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// HILList is the answer of GET /hil.
type HILList struct {
	Requests      []HILRequest `json:"requests"`
	NextPageToken string       `json:"next_page_token"`
	ServerTime    string       `json:"server_time"`
}

// HILListOptions select what ListHIL returns.
type HILListOptions struct {
	// All lists every stored request (decided and closed ones too), newest
	// first, a page at a time; otherwise the pending ones, most urgent
	// first, all at once.
	All       bool
	PageSize  int
	PageToken string
}

// DecisionRequest is a person's decision (POST /hil/{id}/decision).
type DecisionRequest struct {
	Action          string         `json:"action"`
	ApprovedFields  map[string]any `json:"approved_fields,omitempty"`
	RejectionReason string         `json:"rejection_reason,omitempty"`
	Notes           string         `json:"notes,omitempty"`
}

// ListHIL lists requests for a person (GET /hil).
func (c *Client) ListHIL(ctx context.Context, opts HILListOptions) (*HILList, error) {
	q := url.Values{}
	if opts.All {
		q.Set("all", "true")
		if opts.PageSize > 0 {
			q.Set("page_size", strconv.Itoa(opts.PageSize))
		}
		if opts.PageToken != "" {
			q.Set("page_token", opts.PageToken)
		}
	}
	var out HILList
	if _, _, err := c.do(ctx, http.MethodGet, "/hil", q, nil, &out); err != nil {
		return nil, fmt.Errorf("list hil requests: %w", err)
	}
	return &out, nil
}

// GetHIL returns a task's request with its audit trail (GET /hil/{id}).
func (c *Client) GetHIL(ctx context.Context, taskID string) (*HILRequest, error) {
	eid, err := escapeID(taskID)
	if err != nil {
		return nil, fmt.Errorf("get hil request: %w", err)
	}
	var out HILRequest
	if _, _, err := c.do(ctx, http.MethodGet, "/hil/"+eid, nil, nil, &out); err != nil {
		return nil, fmt.Errorf("get hil request %s: %w", taskID, err)
	}
	return &out, nil
}

// DecideHIL decides a task's pending request (POST /hil/{id}/decision) and
// returns the request as decided.
func (c *Client) DecideHIL(ctx context.Context, taskID string, d DecisionRequest) (*HILRequest, error) {
	eid, err := escapeID(taskID)
	if err != nil {
		return nil, fmt.Errorf("decide: %w", err)
	}
	var out HILRequest
	if _, _, err := c.do(ctx, http.MethodPost, "/hil/"+eid+"/decision", nil, d, &out); err != nil {
		return nil, fmt.Errorf("decide %s: %w", taskID, err)
	}
	return &out, nil
}

// HILEvent is one event of GET /hil/stream: what changed and the request
// as it is after the change. Reset is true for the "reset" event, sent
// when a resumed stream lost events: list the requests again.
type HILEvent struct {
	ID     string
	Change string
	Reset  bool
	HILRequest
}

// StreamHIL follows GET /hil/stream and calls fn for each event, resuming
// after lastEventID when it is not empty. It reconnects like StreamTask
// and returns when ctx ends, fn returns ErrStopStream (nil is returned),
// fn returns another error (returned as is), or the retries run out.
func (c *Client) StreamHIL(ctx context.Context, lastEventID string, fn func(HILEvent) error) error {
	dial := func(ctx context.Context, last string) (io.ReadCloser, error) {
		req, err := c.newRequest(ctx, http.MethodGet, "/hil/stream", nil, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := c.send(req)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	err := c.streamLoop(ctx, lastEventID, dial, func(ev Event) error {
		he := HILEvent{ID: ev.ID, Reset: ev.Type == "reset"}
		if ev.Type == "hil" {
			var body struct {
				Change string `json:"change"`
				HILRequest
			}
			if err := json.Unmarshal(ev.Data, &body); err != nil {
				return fmt.Errorf("decode hil event %s: %w", ev.ID, err)
			}
			he.Change, he.HILRequest = body.Change, body.HILRequest
		} else if !he.Reset {
			return nil
		}
		return fn(he)
	})
	if err != nil {
		return fmt.Errorf("stream hil: %w", err)
	}
	return nil
}
