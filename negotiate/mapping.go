package negotiate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Tier-2 sessions (seed 002 §8.2.3). The requester describes the interface
// it wants (input_schema, output_schema, session_purpose); the responder's
// LLM backend maps it onto one of its task types, field by field. The
// mapping is validated against both sides' schemas before the contract is
// made and travels in the contract as session_mapping. Afterwards the
// requester sends tasks of type session_task_type with payloads in its own
// schema; the responder runs them as task_type with the fields renamed by
// input, and the requester reads results renamed back by output.

// ErrMapping wraps every reason a mapping is refused.
var ErrMapping = errors.New("invalid session mapping")

// DefaultSessionType is session_task_type when session_purpose is empty.
const DefaultSessionType = "tier2_session"

// Mapping is a tier-2 session mapping.
type Mapping struct {
	// SessionTaskType is the task type the requester sends: its
	// session_purpose, or DefaultSessionType.
	SessionTaskType string `json:"session_task_type"`
	// TaskType is the responder's task type that runs the session's tasks.
	TaskType string `json:"task_type"`
	// Input maps each field of the responder's input to the requester's
	// input field it is taken from.
	Input map[string]string `json:"input"`
	// Output maps each field of the requester's output to the responder's
	// output field it is taken from.
	Output map[string]string `json:"output,omitempty"`
}

// LocalType is one of the responder's task types as the mapping sees it.
type LocalType struct {
	TaskType     string          `json:"task_type"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// objectSchema is the part of a JSON Schema object a mapping checks.
type objectSchema struct {
	Properties map[string]struct {
		Type any `json:"type"`
	} `json:"properties"`
	Required []string `json:"required"`
}

func parseObjectSchema(raw []byte, what string) (*objectSchema, error) {
	var s objectSchema
	if len(raw) == 0 {
		return &s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%w: %s is not a JSON Schema object: %v", ErrMapping, what, err)
	}
	return &s, nil
}

// typeOf is the declared "type" as comparable text ("" when none).
func (s *objectSchema) typeOf(field string) string {
	t := s.Properties[field].Type
	if t == nil {
		return ""
	}
	b, _ := json.Marshal(t)
	return string(b)
}

func (s *objectSchema) has(field string) bool {
	_, ok := s.Properties[field]
	return ok
}

// ValidateMapping checks m against the requester's schemas and the local
// task types: the task type exists; every input key is a property of its
// input schema and every input value one of the requester's input; every
// required local input is mapped; every output key is a property of the
// requester's output and every value one of the local output; every
// required requester output is mapped; mapped fields that both sides type
// have the same type.
func ValidateMapping(m *Mapping, reqIn, reqOut []byte, locals []LocalType) error {
	if m == nil {
		return fmt.Errorf("%w: no mapping", ErrMapping)
	}
	i := slices.IndexFunc(locals, func(l LocalType) bool { return l.TaskType == m.TaskType })
	if i < 0 {
		return fmt.Errorf("%w: task_type %q is not a task type of this agent", ErrMapping, m.TaskType)
	}
	if m.SessionTaskType == "" {
		return fmt.Errorf("%w: session_task_type is empty", ErrMapping)
	}
	rIn, err := parseObjectSchema(reqIn, "the requester's input_schema")
	if err != nil {
		return err
	}
	rOut, err := parseObjectSchema(reqOut, "the requester's output_schema")
	if err != nil {
		return err
	}
	lIn, err := parseObjectSchema(locals[i].InputSchema, m.TaskType+"'s input_schema")
	if err != nil {
		return err
	}
	lOut, err := parseObjectSchema(locals[i].OutputSchema, m.TaskType+"'s output_schema")
	if err != nil {
		return err
	}
	if err := checkSide("input", m.Input, lIn, rIn); err != nil {
		return err
	}
	return checkSide("output", m.Output, rOut, lOut)
}

// checkSide checks one direction: to is the schema the keys belong to,
// from the one the values come from.
func checkSide(side string, fields map[string]string, to, from *objectSchema) error {
	for _, k := range sortedKeys(fields) {
		v := fields[k]
		switch {
		case !to.has(k):
			return fmt.Errorf("%w: %s field %q is not in the target schema", ErrMapping, side, k)
		case !from.has(v):
			return fmt.Errorf("%w: %s field %q is mapped from %q, which is not in the source schema", ErrMapping, side, k, v)
		case to.typeOf(k) != "" && from.typeOf(v) != "" && to.typeOf(k) != from.typeOf(v):
			return fmt.Errorf("%w: %s field %q is %s but %q is %s", ErrMapping, side, k, to.typeOf(k), v, from.typeOf(v))
		}
	}
	for _, r := range to.Required {
		if _, ok := fields[r]; !ok {
			return fmt.Errorf("%w: required %s field %q is not mapped", ErrMapping, side, r)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// MapInput renames a requester payload (a JSON object) into the local
// task's payload; fields not mapped are dropped.
func (m *Mapping) MapInput(payload []byte) ([]byte, error) { return remap(m.Input, payload) }

// MapOutput renames a local result (a JSON object) into the requester's
// output; a result that is not an object is returned unchanged.
func (m *Mapping) MapOutput(result []byte) ([]byte, error) {
	if len(m.Output) == 0 {
		return result, nil
	}
	return remap(m.Output, result)
}

func remap(fields map[string]string, in []byte) ([]byte, error) {
	var src map[string]json.RawMessage
	if err := json.Unmarshal(in, &src); err != nil {
		return nil, fmt.Errorf("%w: the value to map is not a JSON object", ErrMapping)
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		if val, ok := src[v]; ok {
			out[k] = val
		}
	}
	return json.Marshal(out)
}

// SessionType is the session_task_type a request asks for.
func (r *Request) SessionType() string {
	if r.SessionPurpose != "" {
		return r.SessionPurpose
	}
	return DefaultSessionType
}

// MappingPrompt is the chat that asks an LLM for a mapping of the request
// onto the local task types; ParseMapping reads its answer.
func MappingPrompt(req *Request, locals []LocalType) []ChatMessage {
	want := map[string]any{"session_purpose": req.SessionPurpose, "input_schema": req.InputSchema, "output_schema": req.OutputSchema}
	wb, _ := json.Marshal(want)
	lb, _ := json.Marshal(locals)
	return []ChatMessage{
		{Role: "system", Content: "You map a requested interface onto one of an agent's task types. " +
			`Answer with one JSON object and nothing else: {"task_type": "<one of the task types>", ` +
			`"input": {"<task type input field>": "<requested input field>", ...}, ` +
			`"output": {"<requested output field>": "<task type output field>", ...}}. ` +
			"Map every required field; use only field names that exist in the schemas."},
		{Role: "user", Content: "Requested interface: " + string(wb) + "\nTask types of this agent: " + string(lb)},
	}
}

// ParseMapping reads an LLM's answer: a JSON object, possibly inside a
// Markdown code fence or surrounded by text.
func ParseMapping(answer string, sessionType string) (*Mapping, error) {
	s := strings.TrimSpace(answer)
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var m Mapping
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("%w: the LLM's answer is not a mapping object: %v", ErrMapping, err)
	}
	m.SessionTaskType = sessionType
	if m.Input == nil {
		m.Input = map[string]string{}
	}
	return &m, nil
}
