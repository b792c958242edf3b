package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/synapse-edge/synapse/internal/schema"

	"github.com/synapse-edge/synapse/wire"
)

// HandlerFunc runs one task. It returns the result, which is encoded as JSON
// (a json.RawMessage or []byte holding JSON is used as is), or an error; a
// *wire.Error keeps its code, anything else fails the task with
// execution_failed. It must return promptly when ctx is done.
type HandlerFunc func(ctx context.Context, run *Run) (any, error)

// Handler is a task type this agent runs.
type Handler struct {
	// Type declares the task type (seed 000 §3.1). Type.Type is required.
	Type wire.SupportedTaskType
	// InputSchema, if set, is the JSON Schema payloads are validated against
	// before the task is accepted.
	InputSchema json.RawMessage
	// OutputSchema is declared in the capabilities; it is not enforced.
	OutputSchema json.RawMessage
	// Idempotent handlers are run again after a restart; others' interrupted
	// tasks fail with agent_restarted.
	Idempotent bool
	// Immediate handlers return at once, never blocking (echo): the sync
	// mode runs an idempotent one on the request's goroutine, without a
	// goroutine and timer of its own.
	Immediate bool
	// Disclose, if set, names the result fields each requesting peer may
	// see; the others never leave this agent (disclose.go).
	Disclose []DisclosureRule
	// PersonalData marks every payload of this type as personal data: a
	// peer may ask for it only under a high contract.
	PersonalData bool
	// Func runs the task.
	Func HandlerFunc
}

// DisclosureRule names the result fields Peer (an agent_id, or "*" for any
// peer no other rule names) may see.
type DisclosureRule struct {
	Peer   string   `json:"peer"`
	Fields []string `json:"fields"`
}

type registered struct {
	Handler
	schema *schema.Payload
	// slowUntil: until then (unix ns) peers' requests are not run inline
	// (remote.go).
	slowUntil atomic.Int64
}

// handlers is the registry of task types.
type handlers struct {
	mu sync.RWMutex
	m  map[string]*registered
}

func (hs *handlers) add(h Handler) error {
	if h.Type.Type == "" {
		return fmt.Errorf("register handler: task type is empty")
	}
	if h.Func == nil {
		return fmt.Errorf("register handler %q: Func is nil", h.Type.Type)
	}
	sch, err := schema.CompilePayload(h.Type.Type, h.InputSchema)
	if err != nil {
		return fmt.Errorf("register handler: %w", err)
	}
	if p, ok := wire.LookupTaskType(h.Type.Type); ok { // seed 000 §3.3
		if h.Type.Name == "" {
			h.Type.Name = p.Name
		}
		if h.Type.Description == "" {
			h.Type.Description = p.Description
		}
	}
	if h.Type.Name == "" {
		h.Type.Name = h.Type.Type
	}
	h.Type.InputSchema = schema.String(h.InputSchema)
	if h.Type.InputSchema != "" {
		h.Type.InputSchemaObject = wire.JSONValue(h.Type.InputSchema)
	}
	h.Type.OutputSchema = schema.String(h.OutputSchema)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m == nil {
		hs.m = map[string]*registered{}
	}
	if _, dup := hs.m[h.Type.Type]; dup {
		return fmt.Errorf("register handler: task type %q is already registered", h.Type.Type)
	}
	hs.m[h.Type.Type] = &registered{Handler: h, schema: sch}
	return nil
}

func (hs *handlers) get(taskType string) *registered {
	hs.mu.RLock()
	defer hs.mu.RUnlock()
	return hs.m[taskType]
}

func (hs *handlers) types() []wire.SupportedTaskType {
	hs.mu.RLock()
	defer hs.mu.RUnlock()
	out := make([]wire.SupportedTaskType, 0, len(hs.m))
	for _, h := range hs.m {
		out = append(out, h.Type)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// Run is what a handler sees of the task it runs.
type Run struct {
	id, taskType string
	payload      json.RawMessage
	e            *engine
	inline       *inlineBuf // events kept until the task is stored
	chunks       atomic.Int64
}

// ID is the task id.
func (r *Run) ID() string { return r.id }

// TaskType is the task's type.
func (r *Run) TaskType() string { return r.taskType }

// Payload is the task payload as JSON text.
func (r *Run) Payload() json.RawMessage { return r.payload }

// Decode decodes the payload into v.
func (r *Run) Decode(v any) error {
	if err := json.Unmarshal(r.payload, v); err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "payload: %v", err)
	}
	return nil
}

// Progress reports progress (0-100) with an optional message. It is
// persisted and streamed; values outside 0..100 are clamped.
func (r *Run) Progress(pct int, message string) {
	pct = min(max(pct, 0), 100)
	if r.inline.record(r.e.a.clock.Now(), pct, message) {
		return
	}
	r.e.progress(r.id, pct, message)
}

// Log adds a log line to the task's event stream.
func (r *Run) Log(line string) {
	if r.inline.record(r.e.a.clock.Now(), -1, line) {
		return
	}
	r.e.logLine(r.id, line)
}

// Chunk emits a partial result as a wire.StreamChunk (a log event whose data
// is the chunk): data is encoded as the result is; final marks the last one.
// Chunks are numbered from 1 in the order of the calls. Nothing is emitted
// once the task has ended.
func (r *Run) Chunk(data any, final bool) error {
	b, err := encodeResult(data)
	if err != nil {
		return fmt.Errorf("stream chunk: %w", err)
	}
	c := wire.StreamChunk{TaskID: r.id, Seq: int(r.chunks.Add(1)), Data: b, Final: final}
	if r.inline.recordChunk(r.e.a.clock.Now(), c) {
		return nil
	}
	r.e.chunk(r.id, c)
	return nil
}

func encodeResult(v any) (wire.JSONValue, error) {
	switch t := v.(type) {
	case nil:
		return wire.JSONValue("null"), nil
	case json.RawMessage:
		if !json.Valid(t) {
			return nil, fmt.Errorf("handler returned invalid JSON")
		}
		return wire.JSONValue(t), nil
	case wire.JSONValue:
		if !json.Valid(t) {
			return nil, fmt.Errorf("handler returned invalid JSON")
		}
		return t, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return b, nil
}
