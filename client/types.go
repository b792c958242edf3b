package client

import (
	"encoding/json"
	"time"

	"github.com/synapse-edge/synapse/internal/eventstream"
	"github.com/synapse-edge/synapse/wire"
)

// SubmitRequest is the body of POST /task. Give Payload (a JSON object) or
// PayloadJSON (the same as a string), not both.
type SubmitRequest struct {
	TaskType       string          `json:"task_type"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	PayloadJSON    string          `json:"payload_json,omitempty"`
	CallbackURL    string          `json:"callback_url,omitempty"`
	TTLSeconds     int             `json:"ttl_seconds,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// Priority is one of low, normal, high, urgent; empty means normal.
	Priority string `json:"priority,omitempty"`
	// Target is a peer's agent_id: the task runs there and is tracked here.
	Target string `json:"target,omitempty"`
}

// SubmitOptions tune one SubmitTask call.
type SubmitOptions struct {
	// IdempotencyKey is sent as the Idempotency-Key header.
	IdempotencyKey string
	// Wait asks the agent to hold the answer until the task ends, at most
	// this long (rounded up to whole seconds, at most MaxWait).
	Wait time.Duration
}

// SubmitResponse is the 201 answer of POST /task.
type SubmitResponse struct {
	TaskID  string `json:"task_id"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// Replayed is true when the agent answered from its idempotency store
	// (header Idempotent-Replayed: true).
	Replayed bool `json:"-"`
}

// HistoryEntry is one status transition of a task.
type HistoryEntry struct {
	From   string `json:"from,omitempty"`
	Status string `json:"status"`
	At     string `json:"at"`
	Reason string `json:"reason,omitempty"`
}

// MissingField names one field a task still needs (state info_needed).
type MissingField struct {
	Field          string `json:"field"`
	Reason         string `json:"reason,omitempty"`
	SuggestedValue any    `json:"suggested_value,omitempty"`
	Alternatives   []any  `json:"alternatives,omitempty"`
}

// TaskStatus is the TaskStatusResponse of GET /task/{id}. The status route
// and task lists leave Payload, ResultJSON and History empty.
type TaskStatus struct {
	TaskID        string          `json:"task_id"`
	TaskType      string          `json:"task_type,omitempty"`
	Status        string          `json:"status"`
	Progress      int             `json:"progress"`
	Payload       json.RawMessage `json:"payload,omitempty"`
	ResultJSON    string          `json:"result_json,omitempty"`
	ErrorMessage  string          `json:"error_message,omitempty"`
	ErrorCode     string          `json:"error_code,omitempty"`
	Recoverable   bool            `json:"recoverable,omitempty"`
	MissingFields []MissingField  `json:"missing_fields,omitempty"`
	Target        string          `json:"target,omitempty"`
	CreatedAt     string          `json:"created_at,omitempty"`
	UpdatedAt     string          `json:"updated_at,omitempty"`
	ETag          string          `json:"etag,omitempty"`
	History       []HistoryEntry  `json:"history,omitempty"`
}

// Terminal reports whether the task has reached a final state.
func (t *TaskStatus) Terminal() bool { return IsTerminal(t.Status) }

// IsTerminal reports whether status is one of the final task states:
// completed, failed, cancelled, rejected.
func IsTerminal(status string) bool {
	switch status {
	case "completed", "failed", "cancelled", "rejected":
		return true
	}
	return false
}

// ListOptions filter and page GET /tasks.
type ListOptions struct {
	Status    string
	TaskType  string
	PageSize  int
	PageToken string
}

// TaskList is one page of GET /tasks.
type TaskList struct {
	Tasks         []TaskStatus `json:"tasks"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// Health is the answer of GET /health.
type Health struct {
	Status        string  `json:"status"`
	Version       string  `json:"version"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Config is the config file in force and its last reload; absent
	// when the agent was started without one.
	Config *wire.ConfigStatus `json:"config,omitempty"`
}

// Identity is the answer of GET /identity.
type Identity struct {
	AgentID         string `json:"agent_id"`
	AgentName       string `json:"agent_name"`
	SystemID        string `json:"system_id"`
	PublicKey       string `json:"public_key"`
	Endpoint        string `json:"endpoint"`
	ProtocolVersion string `json:"protocol_version"`
}

// TokenCreated is the answer of POST /tokens. Token is the secret; the agent
// shows it this once and keeps only its hash.
type TokenCreated struct {
	TokenID   string   `json:"token_id"`
	Token     string   `json:"token"`
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"created_at"`
}

// TokenInfo describes one API token without its secret.
type TokenInfo struct {
	TokenID   string   `json:"token_id"`
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"created_at"`
}

// DBCheck is the answer of GET /admin/db/check.
type DBCheck struct {
	OK            bool     `json:"ok"`
	Errors        []string `json:"errors"`
	SchemaVersion int      `json:"schema_version"`
	Tasks         int      `json:"tasks"`
}

// The API token scopes.
const (
	ScopeTasksRead  = wire.ScopeTasksRead
	ScopeTasksWrite = wire.ScopeTasksWrite
	ScopeAdmin      = wire.ScopeAdmin // implies every other scope
)

// Event is one server-sent event of GET /task/{id}/stream.
type Event = eventstream.Event
