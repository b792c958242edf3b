package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Status is a task state (seed 004 §3).
type Status string

// The fourteen task states.
const (
	StatusIdle          Status = "idle"
	StatusPending       Status = "pending"
	StatusConfirmed     Status = "confirmed"
	StatusExecuting     Status = "executing"
	StatusInfoNeeded    Status = "info_needed"
	StatusInfoProvided  Status = "info_provided"
	StatusNeedHuman     Status = "need_human"
	StatusHumanDeciding Status = "human_deciding"
	StatusHumanApproved Status = "human_approved"
	StatusHumanRejected Status = "human_rejected"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
	StatusRejected      Status = "rejected"
)

// AllStatuses lists the states in the order of seed 004 §3.1.
var AllStatuses = []Status{
	StatusIdle, StatusPending, StatusConfirmed, StatusExecuting,
	StatusInfoNeeded, StatusInfoProvided, StatusNeedHuman, StatusHumanDeciding,
	StatusHumanApproved, StatusHumanRejected,
	StatusCompleted, StatusFailed, StatusCancelled, StatusRejected,
}

// Terminal reports whether s is a final state.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusRejected:
		return true
	}
	return false
}

// Valid reports whether s is one of the fourteen states.
func (s Status) Valid() bool {
	for _, v := range AllStatuses {
		if v == s {
			return true
		}
	}
	return false
}

// JSONValue is a JSON value kept as its encoded text. In msgpack it is
// encoded as the equivalent msgpack value, so msgpack clients see ordinary
// maps and arrays with the same field names.
type JSONValue []byte

// MarshalJSON returns the raw text, or null when empty.
func (v JSONValue) MarshalJSON() ([]byte, error) {
	if len(v) == 0 {
		return []byte("null"), nil
	}
	return v, nil
}

// Stored is v as a stored task reads it back: JSON null is no value
// (UnmarshalJSON), so a task kept in memory and its stored copy agree.
func (v JSONValue) Stored() JSONValue {
	if bytes.Equal(v, []byte("null")) {
		return nil
	}
	return v
}

// UnmarshalJSON keeps a copy of the raw text.
func (v *JSONValue) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*v = nil
		return nil
	}
	*v = append((*v)[:0], b...)
	return nil
}

// EncodeMsgpack writes the value as native msgpack.
func (v JSONValue) EncodeMsgpack(enc *msgpack.Encoder) error {
	if len(v) == 0 {
		return enc.EncodeNil()
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return fmt.Errorf("encode json value: %w", err)
	}
	return enc.Encode(jsonNumbers(x))
}

// DecodeMsgpack reads any msgpack value and keeps it as JSON text.
func (v *JSONValue) DecodeMsgpack(dec *msgpack.Decoder) error {
	x, err := dec.DecodeInterfaceLoose()
	if err != nil {
		return err
	}
	if x == nil {
		*v = nil
		return nil
	}
	b, err := json.Marshal(stringKeys(x))
	if err != nil {
		return fmt.Errorf("msgpack value is not representable as JSON: %w", err)
	}
	*v = b
	return nil
}

// jsonNumbers turns json.Number into int64, uint64 or float64 so msgpack
// gets numbers of the right kind.
func jsonNumbers(x any) any {
	switch t := x.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return u
		}
		f, _ := t.Float64() // CheckJSON refused numbers out of range
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = jsonNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = jsonNumbers(e)
		}
	}
	return x
}

// MaxJSONDepth bounds the nesting of JSON payloads, as DefaultMsgpackLimits
// bounds msgpack, so that every accepted payload can be answered in either
// codec.
const MaxJSONDepth = 32

// CheckJSON verifies that b (valid JSON) nests at most MaxJSONDepth deep and
// that every number fits a float64.
func CheckJSON(b []byte) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '{' || c == '[':
			if depth++; depth > MaxJSONDepth {
				return fmt.Errorf("JSON nested deeper than %d", MaxJSONDepth)
			}
		case c == '}' || c == ']':
			depth--
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(b) && strings.IndexByte("+-.eE0123456789", b[j]) >= 0 {
				j++
			}
			if _, err := strconv.ParseFloat(string(b[i:j]), 64); err != nil {
				return fmt.Errorf("number %s is out of range", b[i:j])
			}
			i = j - 1
		}
	}
	return nil
}

// stringKeys converts maps with interface keys (msgpack allows them) into
// JSON-compatible maps; a non-string key is formatted with %v.
func stringKeys(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = stringKeys(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = stringKeys(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = stringKeys(e)
		}
	case []byte:
		return t // encoding/json renders bytes as base64
	}
	return x
}

// IsObject reports whether v holds a JSON object.
func (v JSONValue) IsObject() bool {
	b := bytes.TrimLeft(v, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// SubmitRequest is the body of POST /task (SPEC §5.2).
type SubmitRequest struct {
	TaskType       string    `json:"task_type" msgpack:"task_type"`
	Payload        JSONValue `json:"payload,omitempty" msgpack:"payload,omitempty"`
	PayloadJSON    string    `json:"payload_json,omitempty" msgpack:"payload_json,omitempty"`
	CallbackURL    string    `json:"callback_url,omitempty" msgpack:"callback_url,omitempty"`
	TTLSeconds     int       `json:"ttl_seconds,omitempty" msgpack:"ttl_seconds,omitempty"`
	IdempotencyKey string    `json:"idempotency_key,omitempty" msgpack:"idempotency_key,omitempty"`
	Priority       string    `json:"priority,omitempty" msgpack:"priority,omitempty"`
	Target         string    `json:"target,omitempty" msgpack:"target,omitempty"`
}

// Normalize checks the request and merges payload_json into Payload.
func (r *SubmitRequest) Normalize() error {
	if r.TaskType == "" {
		return Errorf(CodeInvalidParams, "task_type is required").With("field", "task_type")
	}
	if len(r.TaskType) > 128 {
		return Errorf(CodeInvalidParams, "task_type is longer than 128 bytes").With("field", "task_type")
	}
	if r.PayloadJSON != "" {
		if len(r.Payload) != 0 {
			return Errorf(CodeInvalidParams, "give payload or payload_json, not both")
		}
		if !json.Valid([]byte(r.PayloadJSON)) {
			return Errorf(CodeInvalidParams, "payload_json is not valid JSON").With("field", "payload_json")
		}
		r.Payload = JSONValue(r.PayloadJSON)
		r.PayloadJSON = ""
	}
	if len(r.Payload) == 0 {
		r.Payload = JSONValue("{}")
	}
	if !r.Payload.IsObject() {
		return Errorf(CodeInvalidParams, "payload must be a JSON object").With("field", "payload")
	}
	if err := CheckJSON(r.Payload); err != nil {
		return Errorf(CodeInvalidParams, "payload: %v", err).With("field", "payload")
	}
	if r.TTLSeconds < 0 {
		return Errorf(CodeInvalidParams, "ttl_seconds must not be negative").With("field", "ttl_seconds")
	}
	switch r.Priority {
	case "", "low", "normal", "high", "urgent":
	default:
		return Errorf(CodeInvalidParams, "priority must be low, normal, high or urgent").With("field", "priority")
	}
	return nil
}

// SubmitResponse is the 201 answer of POST /task.
type SubmitResponse struct {
	TaskID  string `json:"task_id" msgpack:"task_id"`
	Status  Status `json:"status" msgpack:"status"`
	Message string `json:"message" msgpack:"message"`
}

// Time is a timestamp that encodes as TimeFormat (RFC 3339, UTC,
// milliseconds) in JSON and msgpack alike.
type Time struct{ time.Time }

// MarshalJSON writes the time in TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// UnmarshalJSON reads any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// EncodeMsgpack writes the time as a TimeFormat string.
func (t Time) EncodeMsgpack(enc *msgpack.Encoder) error { return enc.EncodeString(FormatTime(t.Time)) }

// DecodeMsgpack reads a time string.
func (t *Time) DecodeMsgpack(dec *msgpack.Decoder) error {
	s, err := dec.DecodeString()
	if err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// Transition is one entry of a task's history.
type Transition struct {
	From   Status `json:"from,omitempty" msgpack:"from,omitempty"`
	Status Status `json:"status" msgpack:"status"`
	At     Time   `json:"at" msgpack:"at"`
	Reason string `json:"reason,omitempty" msgpack:"reason,omitempty"`
}

// MissingField is one entry of TaskNeedInfoPayload.missing_fields (seed 004 §6.7).
type MissingField struct {
	Field          string `json:"field" msgpack:"field"`
	Reason         string `json:"reason" msgpack:"reason"`
	SuggestedValue any    `json:"suggested_value,omitempty" msgpack:"suggested_value,omitempty"`
	Alternatives   []any  `json:"alternatives,omitempty" msgpack:"alternatives,omitempty"`
}

// Task is the persisted record of one task.
type Task struct {
	ID           string      `json:"task_id" msgpack:"id"`
	Type         string      `json:"task_type" msgpack:"type"`
	Status       Status      `json:"status" msgpack:"st"`
	Progress     int         `json:"progress" msgpack:"pr"`
	Payload      JSONValue   `json:"payload,omitempty" msgpack:"pl,omitempty"`
	Result       JSONValue   `json:"result,omitempty" msgpack:"rs,omitempty"`
	ErrorCode    ErrorCode   `json:"error_code,omitempty" msgpack:"ec,omitempty"`
	ErrorMessage string      `json:"error_message,omitempty" msgpack:"em,omitempty"`
	Recoverable  bool        `json:"recoverable,omitempty" msgpack:"rc,omitempty"`
	CallbackURL  string      `json:"callback_url,omitempty" msgpack:"cb,omitempty"`
	TTLSeconds   int         `json:"ttl_seconds,omitempty" msgpack:"ttl,omitempty"`
	Priority     string      `json:"priority,omitempty" msgpack:"pri,omitempty"`
	Target       string      `json:"target,omitempty" msgpack:"tgt,omitempty"`
	Origin       *TaskOrigin `json:"origin,omitempty" msgpack:"org,omitempty"`
	// CancelRequested marks a delegated task whose cancel was sent to the
	// executing peer and not yet confirmed.
	CancelRequested bool `json:"cancel_requested,omitempty" msgpack:"cx,omitempty"`
	// Human is the pending request for a person (need_human), if any.
	Human         *TaskNeedHumanPayload `json:"human,omitempty" msgpack:"hu,omitempty"`
	Owner         string                `json:"owner,omitempty" msgpack:"own,omitempty"`
	MissingFields []MissingField        `json:"missing_fields,omitempty" msgpack:"mf,omitempty"`
	CreatedAt     time.Time             `json:"created_at" msgpack:"ca"`
	UpdatedAt     time.Time             `json:"updated_at" msgpack:"ua"`
	StartedAt     time.Time             `json:"started_at,omitzero" msgpack:"sa,omitempty"`
	// Deadline is when a delegated task ends failed with execution_timeout
	// on both sides if it is not final (seed 004 §6.1 task.deadline).
	Deadline time.Time `json:"deadline,omitzero" msgpack:"dl,omitempty"`
	// Seq is the sequence number of the task's last event; the ETag derives from it.
	Seq     uint64       `json:"seq" msgpack:"seq"`
	History []Transition `json:"history" msgpack:"h"`
}

// ETag is the entity tag of the task's current state.
func (t *Task) ETag() string { return `"` + t.ID + "-" + strconv.FormatUint(t.Seq, 10) + `"` }

// TaskStatusResponse is the answer of GET /task/{id} (SPEC §5.2). The status
// route leaves out payload, result and history.
type TaskStatusResponse struct {
	TaskID   string    `json:"task_id" msgpack:"task_id"`
	TaskType string    `json:"task_type" msgpack:"task_type"`
	Status   Status    `json:"status" msgpack:"status"`
	Progress int       `json:"progress" msgpack:"progress"`
	Payload  JSONValue `json:"payload,omitempty" msgpack:"payload,omitempty"`
	// ResultJSON is set in full answers only (nil: left out).
	ResultJSON *string `json:"result_json,omitempty" msgpack:"result_json,omitempty"`
	// Result is the same result parsed (so that jq .result.x works); in
	// msgpack answers a native msgpack value under the same name.
	Result       JSONValue `json:"result,omitempty" msgpack:"result,omitempty"`
	ErrorMessage string    `json:"error_message" msgpack:"error_message"`
	ErrorCode    ErrorCode `json:"error_code,omitempty" msgpack:"error_code,omitempty"`
	// NumericCode is error_code's seed-000 numeric code (2004, 4004), if
	// it has one.
	NumericCode   int                   `json:"numeric_code,omitempty" msgpack:"numeric_code,omitempty"`
	Recoverable   bool                  `json:"recoverable,omitempty" msgpack:"recoverable,omitempty"`
	MissingFields []MissingField        `json:"missing_fields,omitempty" msgpack:"missing_fields,omitempty"`
	Target        string                `json:"target,omitempty" msgpack:"target,omitempty"`
	Origin        *TaskOrigin           `json:"origin,omitempty" msgpack:"origin,omitempty"`
	Human         *TaskNeedHumanPayload `json:"human,omitempty" msgpack:"human,omitempty"`
	CreatedAt     string                `json:"created_at" msgpack:"created_at"`
	UpdatedAt     string                `json:"updated_at" msgpack:"updated_at"`
	Deadline      string                `json:"deadline,omitempty" msgpack:"deadline,omitempty"`
	ETag          string                `json:"etag" msgpack:"etag"`
	History       []Transition          `json:"history,omitempty" msgpack:"history,omitempty"`
}

// TimeFormat is how every timestamp is written: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeFormat.
func FormatTime(t time.Time) string {
	var b [len(TimeFormat) + 8]byte
	return string(appendTimeFormat(b[:0], t))
}

// StatusResponse renders t; full adds payload, result and history.
func (t *Task) StatusResponse(full bool) *TaskStatusResponse {
	r := &TaskStatusResponse{
		TaskID: t.ID, TaskType: t.Type, Status: t.Status, Progress: t.Progress,
		ErrorMessage: t.ErrorMessage, ErrorCode: t.ErrorCode, NumericCode: NumericCode(t.ErrorCode), Recoverable: t.Recoverable,
		MissingFields: t.MissingFields, Target: t.Target, Origin: t.Origin, Human: t.Human,
		CreatedAt: FormatTime(t.CreatedAt), ETag: t.ETag(),
	}
	r.UpdatedAt = r.CreatedAt
	if !t.UpdatedAt.Equal(t.CreatedAt) {
		r.UpdatedAt = FormatTime(t.UpdatedAt)
	}
	if !t.Deadline.IsZero() {
		r.Deadline = FormatTime(t.Deadline)
	}
	if full {
		r.Payload = t.Payload
		res := string(t.Result)
		r.ResultJSON = &res
		r.Result = t.Result
		r.History = t.History
	}
	return r
}

// TaskList is the answer of GET /tasks.
type TaskList struct {
	Tasks         []*TaskStatusResponse `json:"tasks" msgpack:"tasks"`
	NextPageToken string                `json:"next_page_token" msgpack:"next_page_token"`
}

// EventType names a task stream event (SPEC §5.2).
type EventType string

// The five SSE event types.
const (
	EventStatus   EventType = "status_update"
	EventProgress EventType = "progress"
	EventLog      EventType = "log"
	EventError    EventType = "error"
	EventComplete EventType = "complete"
)

// Event is one persisted task event; Seq is its SSE id.
type Event struct {
	TaskID string    `json:"task_id" msgpack:"t"`
	Seq    uint64    `json:"seq" msgpack:"s"`
	Type   EventType `json:"event_type" msgpack:"y"`
	At     Time      `json:"at" msgpack:"a"`
	Data   JSONValue `json:"data" msgpack:"d"`
}
