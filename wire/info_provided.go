package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// The payload of p2p:task_info_provided, which seed 004 §6.7 leaves
// undefined: the requester answers a task_need_info, whose missing_fields
// name the fields wanted. DecodeInfoProvided takes the shapes an
// implementation written from the seed may send, in this order:
//
//	{"task_id": "t", "fields": {"style": "classic"}}            (this agent's)
//	{"task_id": "t", "fields": [{"field": "style", "value": "classic"}]}
//	{"task_id": "t", "provided_fields": ...}                     (either form)
//	{"task_id": "t", "style": "classic"}                         (flat)
//
// A list mirrors missing_fields: each entry names its field and gives its
// value. In the flat form every key beside task_id is a field. A refusal
// is message_format_invalid with details.field naming the key that is
// missing or wrong.

// infoFieldKeys are the keys that may hold the fields.
var infoFieldKeys = []string{"fields", "provided_fields"}

// DecodeInfoProvided decodes a p2p:task_info_provided payload in any of
// the shapes above; Fields is then always a JSON object.
func DecodeInfoProvided(p RawPayload) (*TaskInfoProvidedPayload, error) {
	refuse := func(key, format string, args ...any) error {
		return Errorf(CodeMessageFormatInvalid, "p2p:task_info_provided payload: "+format, args...).With("field", key)
	}
	jp, err := p.Convert(PayloadJSON)
	if err != nil || jp.IsZero() {
		return nil, refuse("payload", "not a JSON or msgpack object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(jp.Bytes(), &obj); err != nil || obj == nil {
		return nil, refuse("payload", "must be an object with task_id and the fields")
	}
	var out TaskInfoProvidedPayload
	if raw, ok := obj["task_id"]; !ok {
		return nil, refuse("task_id", "task_id is missing")
	} else if json.Unmarshal(raw, &out.TaskID) != nil || out.TaskID == "" {
		return nil, refuse("task_id", "task_id must be a non-empty string")
	}
	for _, key := range infoFieldKeys {
		raw, ok := obj[key]
		if !ok {
			continue
		}
		fields, err := infoFields(raw)
		if err != nil {
			return nil, refuse(key, "%s %v", key, err)
		}
		out.Fields = fields
		return &out, nil
	}
	delete(obj, "task_id")
	if len(obj) == 0 {
		return nil, refuse("fields", "fields is missing: send the fields asked for as fields {\"name\": value}")
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, refuse("fields", "%v", err)
	}
	out.Fields = b
	return &out, nil
}

// infoFields reads the fields of a task_info_provided: an object, or a
// list of {"field", "value"}.
func infoFields(raw json.RawMessage) (JSONValue, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		return JSONValue(raw), nil
	case len(raw) > 0 && raw[0] == '[':
		var list []struct {
			Field *string         `json:"field"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, errInfoFields
		}
		obj := make(map[string]json.RawMessage, len(list))
		for i, e := range list {
			if e.Field == nil || *e.Field == "" {
				return nil, &infoEntryError{i, "field"}
			}
			if e.Value == nil {
				return nil, &infoEntryError{i, "value"}
			}
			obj[*e.Field] = e.Value
		}
		b, err := json.Marshal(obj)
		return b, err
	}
	return nil, errInfoFields
}

var errInfoFields = errors.New(`must be an object of the fields, or a list of {"field": name, "value": value}`)

// infoEntryError is a list entry without its field name or value.
type infoEntryError struct {
	index int
	key   string
}

func (e *infoEntryError) Error() string {
	return "entry " + strconv.Itoa(e.index) + " has no " + e.key
}
