package a2a

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// DefaultTaskType is the task type of a message without metadata
// "task_type".
const DefaultTaskType = "echo"

// ResultArtifactID names the artifact that carries a task's result.
const ResultArtifactID = "result"

// The A2A states, in v0.3 spelling; v1.0 spells them TASK_STATE_ + upper
// case with underscores.
const (
	StateSubmitted     = "submitted"
	StateWorking       = "working"
	StateInputRequired = "input-required"
	StateAuthRequired  = "auth-required"
	StateCompleted     = "completed"
	StateFailed        = "failed"
	StateCanceled      = "canceled"
	StateRejected      = "rejected"
)

var stateOf = map[wire.Status]string{
	wire.StatusIdle: StateSubmitted, wire.StatusPending: StateSubmitted, wire.StatusConfirmed: StateSubmitted,
	wire.StatusExecuting: StateWorking, wire.StatusInfoProvided: StateWorking,
	wire.StatusHumanApproved: StateWorking, wire.StatusHumanRejected: StateWorking,
	wire.StatusInfoNeeded: StateInputRequired, wire.StatusNeedHuman: StateInputRequired,
	wire.StatusHumanDeciding: StateInputRequired,
	wire.StatusCompleted:     StateCompleted, wire.StatusFailed: StateFailed,
	wire.StatusCancelled: StateCanceled, wire.StatusRejected: StateRejected,
}

// State names s in version v.
func State(s wire.Status, v Version) string {
	st, ok := stateOf[s]
	if !ok {
		st = "unknown"
	}
	if v == V10 {
		return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(st, "-", "_"))
	}
	return st
}

// Statuses returns our states that map to the A2A state (either spelling);
// ok is false for a name that is no A2A state.
func Statuses(state string) (out []wire.Status, ok bool) {
	st := strings.ToLower(strings.TrimPrefix(state, "TASK_STATE_"))
	st = strings.ReplaceAll(st, "_", "-")
	switch st {
	case StateSubmitted, StateWorking, StateInputRequired, StateAuthRequired,
		StateCompleted, StateFailed, StateCanceled, StateRejected:
	default:
		return nil, false
	}
	for _, s := range wire.AllStatuses {
		if stateOf[s] == st {
			out = append(out, s)
		}
	}
	return out, true
}

// Submission turns a message into a task type and payload (see the package
// doc).
func Submission(m *Message) (taskType string, payload wire.JSONValue, err error) {
	if m == nil {
		return "", nil, Errorf(CodeInvalidParams, "params.message is required")
	}
	if len(m.Parts) == 0 {
		return "", nil, Errorf(CodeInvalidParams, "the message has no parts")
	}
	taskType = DefaultTaskType
	if tt, ok := m.Metadata["task_type"]; ok {
		s, isStr := tt.(string)
		if !isStr || s == "" {
			return "", nil, Errorf(CodeInvalidParams, "message metadata task_type must be a non-empty string")
		}
		taskType = s
	}
	var texts []string
	var data map[string]json.RawMessage
	for i, p := range m.Parts {
		switch {
		case p.Kind == "text" || (p.Kind == "" && p.Text != nil):
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		case p.Kind == "data" || (p.Kind == "" && len(p.Data) > 0):
			if data != nil {
				continue // the first data part is the payload
			}
			d := bytes.TrimSpace(p.Data)
			if err := json.Unmarshal(d, &data); err != nil || data == nil {
				return "", nil, Errorf(CodeInvalidParams, "message part %d: data must be a JSON object", i)
			}
		default:
			return "", nil, Errorf(CodeContentTypeNotSupported, "message part %d: only text and data parts are supported", i)
		}
	}
	if data == nil {
		data = map[string]json.RawMessage{}
	}
	if len(texts) > 0 {
		b, _ := json.Marshal(strings.Join(texts, "\n"))
		data["text"] = b
	}
	b, err := json.Marshal(data)
	if err != nil {
		return "", nil, Errorf(CodeInvalidParams, "message data: %v", err)
	}
	return taskType, b, nil
}

func role(agent bool, v Version) string {
	switch {
	case agent && v == V10:
		return "ROLE_AGENT"
	case agent:
		return "agent"
	case v == V10:
		return "ROLE_USER"
	}
	return "user"
}

func kind(k string, v Version) string {
	if v == V10 {
		return ""
	}
	return k
}

// TextPart is a text part in version v.
func TextPart(s string, v Version) Part { return Part{Kind: kind("text", v), Text: &s} }

// DataPart is a data part in version v; obj must be a JSON object.
func DataPart(obj json.RawMessage, v Version) Part { return Part{Kind: kind("data", v), Data: obj} }

// resultObject makes a result a JSON object: objects as they are, anything
// else as {"value": ...}.
func resultObject(r wire.JSONValue) json.RawMessage {
	if r.IsObject() {
		return json.RawMessage(r)
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"value": json.RawMessage(r)})
	return b
}

// statusOf renders t's status; a failure or a question carries a message.
func statusOf(t *wire.Task, v Version) TaskStatus {
	s := TaskStatus{State: State(t.Status, v), Timestamp: wire.FormatTime(t.UpdatedAt)}
	var parts []Part
	switch {
	case t.ErrorMessage != "" || t.ErrorCode != "":
		parts = []Part{TextPart(t.ErrorMessage, v)}
		if b, err := json.Marshal(map[string]any{"code": t.ErrorCode, "recoverable": t.Recoverable}); err == nil {
			parts = append(parts, DataPart(b, v))
		}
	case len(t.MissingFields) > 0:
		b, _ := json.Marshal(map[string]any{"missing_fields": t.MissingFields})
		parts = []Part{TextPart("the payload is missing required fields", v), DataPart(b, v)}
	case t.Human != nil:
		b, _ := json.Marshal(t.Human)
		parts = []Part{TextPart("waiting for a person's decision", v), DataPart(b, v)}
	}
	if parts != nil {
		s.Message = &Message{Kind: kind("message", v), MessageID: t.ID + "-status-" + itoa(t.Seq),
			Role: role(true, v), Parts: parts, TaskID: t.ID, ContextID: t.ID}
	}
	return s
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// ResultArtifact is the artifact of t's result; ok is false without one.
func ResultArtifact(t *wire.Task, v Version) (Artifact, bool) {
	if len(t.Result) == 0 || t.Status != wire.StatusCompleted {
		return Artifact{}, false
	}
	return Artifact{ArtifactID: ResultArtifactID, Name: ResultArtifactID,
		Parts: []Part{DataPart(resultObject(t.Result), v)}}, true
}

// FromTask renders t as an A2A task. History holds the request, rebuilt
// from the payload, unless historyLength is 0.
func FromTask(t *wire.Task, v Version, historyLength *int) *Task {
	out := &Task{Kind: kind("task", v), ID: t.ID, ContextID: t.ID, Status: statusOf(t, v),
		Metadata: map[string]any{"task_type": t.Type}}
	if a, ok := ResultArtifact(t, v); ok {
		out.Artifacts = []Artifact{a}
	}
	if (historyLength == nil || *historyLength > 0) && t.Payload.IsObject() {
		out.History = []Message{{Kind: kind("message", v), MessageID: t.ID + "-request", Role: role(false, v),
			Parts: []Part{DataPart(json.RawMessage(t.Payload), v)}, TaskID: t.ID, ContextID: t.ID}}
	}
	return out
}

// StatusUpdateOf is the status update event of t's current state.
func StatusUpdateOf(t *wire.Task, v Version) *StatusUpdate {
	u := &StatusUpdate{Kind: kind("status-update", v), TaskID: t.ID, ContextID: t.ID, Status: statusOf(t, v)}
	if v == V03 {
		final := t.Status.Terminal()
		u.Final = &final
	}
	return u
}

// ArtifactUpdateOf is the artifact event of t's result; nil without one.
func ArtifactUpdateOf(t *wire.Task, v Version) *ArtifactUpdate {
	a, ok := ResultArtifact(t, v)
	if !ok {
		return nil
	}
	return &ArtifactUpdate{Kind: kind("artifact-update", v), TaskID: t.ID, ContextID: t.ID, Artifact: a, LastChunk: true}
}

// Wrap shapes a send or stream result for version v: v1.0 wraps it in the
// field that names its kind, v0.3 answers it bare (it has its own kind).
func Wrap(x any, v Version) any {
	if v == V03 {
		return x
	}
	switch x := x.(type) {
	case *Task:
		return &struct {
			Task *Task `json:"task"`
		}{x}
	case *StatusUpdate:
		return &struct {
			StatusUpdate *StatusUpdate `json:"statusUpdate"`
		}{x}
	case *ArtifactUpdate:
		return &struct {
			ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate"`
		}{x}
	case *Message:
		return &struct {
			Message *Message `json:"message"`
		}{x}
	}
	return x
}

// PushAnswer renders a stored push config in version v.
func PushAnswer(c *store.PushConfig, v Version) *TaskPushConfig {
	if v == V03 {
		return &TaskPushConfig{TaskID: c.TaskID, Nested: &PushConfig{ID: c.ID, URL: c.URL, Token: c.Token, Authentication: c.Auth}}
	}
	return &TaskPushConfig{TaskID: c.TaskID, ID: c.ID, URL: c.URL, Token: c.Token, Authentication: c.Auth}
}
