package a2a

import (
	"encoding/json"
	"fmt"
)

// Version is the protocol version a method name belongs to; it decides the
// shape of the answer.
type Version int

// The two versions served.
const (
	V03 Version = iota // v0.3: "message/send", lower-case states, "kind" on every object
	V10                // v1.0: "SendMessage", TASK_STATE_* states, no kinds
)

// Op is an operation, whatever its name in either version.
type Op int

// The operations.
const (
	OpSend Op = iota + 1
	OpStream
	OpGet
	OpList
	OpCancel
	OpSubscribe
	OpPushCreate
	OpPushGet
	OpPushList
	OpPushDelete
)

// methods names every accepted method.
var methods = map[string]struct {
	op Op
	v  Version
}{
	"SendMessage":                         {OpSend, V10},
	"SendStreamingMessage":                {OpStream, V10},
	"GetTask":                             {OpGet, V10},
	"ListTasks":                           {OpList, V10},
	"CancelTask":                          {OpCancel, V10},
	"SubscribeToTask":                     {OpSubscribe, V10},
	"CreateTaskPushNotificationConfig":    {OpPushCreate, V10},
	"GetTaskPushNotificationConfig":       {OpPushGet, V10},
	"ListTaskPushNotificationConfig":      {OpPushList, V10},
	"ListTaskPushNotificationConfigs":     {OpPushList, V10},
	"DeleteTaskPushNotificationConfig":    {OpPushDelete, V10},
	"message/send":                        {OpSend, V03},
	"message/stream":                      {OpStream, V03},
	"tasks/get":                           {OpGet, V03},
	"tasks/list":                          {OpList, V03},
	"tasks/cancel":                        {OpCancel, V03},
	"tasks/resubscribe":                   {OpSubscribe, V03},
	"tasks/pushNotificationConfig/set":    {OpPushCreate, V03},
	"tasks/pushNotificationConfig/get":    {OpPushGet, V03},
	"tasks/pushNotificationConfig/list":   {OpPushList, V03},
	"tasks/pushNotificationConfig/delete": {OpPushDelete, V03},
}

// Method looks a method name up.
func Method(name string) (Op, Version, bool) {
	m, ok := methods[name]
	return m.op, m.v, ok
}

// Streaming reports whether op answers with an SSE stream.
func (op Op) Streaming() bool { return op == OpStream || op == OpSubscribe }

// Writes reports whether op changes something (and needs the write scope).
func (op Op) Writes() bool {
	switch op {
	case OpSend, OpStream, OpCancel, OpPushCreate, OpPushDelete:
		return true
	}
	return false
}

// Request is a JSON-RPC 2.0 request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: Result or Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// MarshalJSON writes "result" (null when empty) or "error", never both.
func (r *Response) MarshalJSON() ([]byte, error) { return r.Encode() }

// Encode is MarshalJSON, for callers that write the bytes themselves:
// json.Marshal of a Response scans MarshalJSON's output once more.
func (r *Response) Encode() ([]byte, error) {
	var body any = r.Result
	key := `,"result":`
	if r.Error != nil {
		body, key = r.Error, `,"error":`
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	id := nullID(r.ID)
	if !json.Valid(id) {
		return nil, fmt.Errorf("jsonrpc id %q is not JSON", id)
	}
	out := make([]byte, 0, len(b)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, key...)
	out = append(out, b...)
	return append(out, '}'), nil
}

// NewResponse answers id with result.
func NewResponse(id json.RawMessage, result any) *Response {
	return &Response{JSONRPC: "2.0", ID: nullID(id), Result: result}
}

// NewErrorResponse answers id with err.
func NewErrorResponse(id json.RawMessage, err *RPCError) *Response {
	return &Response{JSONRPC: "2.0", ID: nullID(id), Error: err}
}

func nullID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// Part is a message or artifact part. Requests may carry v0.3 parts (with
// kind) or v1.0 parts (the field set names the kind).
type Part struct {
	Kind     string          `json:"kind,omitempty"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	File     json.RawMessage `json:"file,omitempty"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	URL      json.RawMessage `json:"url,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Message is an A2A message.
type Message struct {
	Kind      string         `json:"kind,omitempty"`
	MessageID string         `json:"messageId"`
	Role      string         `json:"role"`
	Parts     []Part         `json:"parts"`
	TaskID    string         `json:"taskId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a task's state with an optional message.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// Task is an A2A task.
type Task struct {
	Kind      string         `json:"kind,omitempty"`
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StatusUpdate is a TaskStatusUpdateEvent.
type StatusUpdate struct {
	Kind      string     `json:"kind,omitempty"`
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	// Final is v0.3's; v1.0 has no such field (the stream ends).
	Final *bool `json:"final,omitempty"`
}

// ArtifactUpdate is a TaskArtifactUpdateEvent.
type ArtifactUpdate struct {
	Kind      string   `json:"kind,omitempty"`
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	LastChunk bool     `json:"lastChunk"`
}

// SendConfiguration is MessageSendConfiguration (both versions' fields).
type SendConfiguration struct {
	// Blocking is v0.3's; nil means blocking.
	Blocking *bool `json:"blocking,omitempty"`
	// ReturnImmediately is v1.0's.
	ReturnImmediately bool        `json:"returnImmediately,omitempty"`
	HistoryLength     *int        `json:"historyLength,omitempty"`
	PushConfig        *PushConfig `json:"pushNotificationConfig,omitempty"`
	// TaskPushConfig is v1.0's name of the field.
	TaskPushConfig      *PushConfig `json:"taskPushNotificationConfig,omitempty"`
	AcceptedOutputModes []string    `json:"acceptedOutputModes,omitempty"`
}

// Push returns the push config of either field.
func (c *SendConfiguration) Push() *PushConfig {
	if c == nil {
		return nil
	}
	if c.PushConfig != nil {
		return c.PushConfig
	}
	return c.TaskPushConfig
}

// Blocks reports whether the send waits for the task to finish.
func (c *SendConfiguration) Blocks() bool {
	if c == nil {
		return true
	}
	if c.ReturnImmediately {
		return false
	}
	return c.Blocking == nil || *c.Blocking
}

// SendParams are the params of SendMessage and message/send.
type SendParams struct {
	Message       *Message           `json:"message"`
	Configuration *SendConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any     `json:"metadata,omitempty"`
}

// TaskIDParams are the params of GetTask, CancelTask, SubscribeToTask and
// their v0.3 names.
type TaskIDParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// ListParams are the params of ListTasks.
type ListParams struct {
	ContextID        string `json:"contextId,omitempty"`
	Status           string `json:"status,omitempty"`
	PageSize         int    `json:"pageSize,omitempty"`
	PageToken        string `json:"pageToken,omitempty"`
	HistoryLength    *int   `json:"historyLength,omitempty"`
	IncludeArtifacts bool   `json:"includeArtifacts,omitempty"`
}

// ListResult is the result of ListTasks.
type ListResult struct {
	Tasks         []*Task `json:"tasks"`
	NextPageToken string  `json:"nextPageToken"`
	PageSize      int     `json:"pageSize"`
	TotalSize     int     `json:"totalSize"`
}

// PushConfig is a PushNotificationConfig.
type PushConfig struct {
	ID             string          `json:"id,omitempty"`
	URL            string          `json:"url"`
	Token          string          `json:"token,omitempty"`
	Authentication json.RawMessage `json:"authentication,omitempty"`
}

// PushParams reads the params of every push config method in both
// versions. v1.0 uses a flat TaskPushNotificationConfig (taskId, id, url,
// token, authentication); v0.3 nests the config (taskId,
// pushNotificationConfig) for set, and names the task "id" and the config
// "pushNotificationConfigId" for get, list and delete.
type PushParams struct {
	TaskID         string          `json:"taskId,omitempty"`
	ID             string          `json:"id,omitempty"`
	URL            string          `json:"url,omitempty"`
	Token          string          `json:"token,omitempty"`
	Authentication json.RawMessage `json:"authentication,omitempty"`
	Nested         *PushConfig     `json:"pushNotificationConfig,omitempty"`
	ConfigID       string          `json:"pushNotificationConfigId,omitempty"`
}

// TaskPushConfig is a TaskPushNotificationConfig as answered.
type TaskPushConfig struct {
	// v1.0: flat.
	TaskID         string          `json:"taskId"`
	ID             string          `json:"id,omitempty"`
	URL            string          `json:"url,omitempty"`
	Token          string          `json:"token,omitempty"`
	Authentication json.RawMessage `json:"authentication,omitempty"`
	// v0.3: nested.
	Nested *PushConfig `json:"pushNotificationConfig,omitempty"`
}

// PushListResult is the v1.0 result of ListTaskPushNotificationConfig.
type PushListResult struct {
	Configs       []*TaskPushConfig `json:"configs"`
	NextPageToken string            `json:"nextPageToken"`
}
