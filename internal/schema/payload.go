package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/wire"
)

// Payload validates task payloads against a handler's input_schema.
type Payload struct {
	s *Schema
}

// CompilePayload compiles the input_schema of taskType; nil when raw is
// empty (every payload is valid).
func CompilePayload(taskType string, raw []byte) (*Payload, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	s, err := Compile(raw)
	if err != nil {
		return nil, fmt.Errorf("input_schema of %q: %w", taskType, err)
	}
	return &Payload{s: s}, nil
}

// Validate checks payload. Missing required properties are returned as
// missing fields (the task then waits in info_needed); any other violation
// is an error listing each one.
func (p *Payload) Validate(payload []byte) ([]wire.MissingField, error) {
	if p == nil {
		return nil, nil
	}
	vs, err := p.s.Validate(payload)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "payload is not valid JSON: %v", err)
	}
	var missing []wire.MissingField
	var other []string
	for _, v := range vs {
		if v.Missing {
			field := strings.ReplaceAll(strings.TrimPrefix(v.Path, "/"), "/", ".")
			missing = append(missing, wire.MissingField{Field: field, Reason: "required by the input schema"})
			continue
		}
		other = append(other, v.String())
	}
	if len(other) > 0 {
		return nil, wire.Errorf(wire.CodeValSchema, "payload does not match input_schema: %s", strings.Join(other, "; ")).
			With("violations", other)
	}
	return missing, nil
}

// String renders a schema compactly, for SupportedTaskType.input_schema.
func String(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}
