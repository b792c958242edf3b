package wire_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// infoVectors are the known answers of DecodeInfoProvided: a payload and
// the fields it gives, or the key its refusal names.
var infoVectors = []struct {
	name, payload string
	fields        string // the fields, as JSON; "" for a refusal
	badKey        string
}{
	{"object", `{"task_id":"t1","fields":{"style":"classic","n":2}}`, `{"n":2,"style":"classic"}`, ""},
	{"list", `{"task_id":"t1","fields":[{"field":"style","value":"classic"},{"field":"n","value":2}]}`, `{"n":2,"style":"classic"}`, ""},
	{"provided_fields", `{"task_id":"t1","provided_fields":{"style":"classic"}}`, `{"style":"classic"}`, ""},
	{"flat", `{"task_id":"t1","style":"classic"}`, `{"style":"classic"}`, ""},
	{"no task_id", `{"fields":{"style":"classic"}}`, "", "task_id"},
	{"task_id not a string", `{"task_id":7,"fields":{}}`, "", "task_id"},
	{"no fields", `{"task_id":"t1"}`, "", "fields"},
	{"fields a string", `{"task_id":"t1","fields":"classic"}`, "", "fields"},
	{"list entry without a name", `{"task_id":"t1","fields":[{"value":1}]}`, "", "fields"},
	{"list entry without a value", `{"task_id":"t1","provided_fields":[{"field":"n"}]}`, "", "provided_fields"},
	{"not an object", `["t1"]`, "", "payload"},
}

func TestDecodeInfoProvided(t *testing.T) {
	for _, v := range infoVectors {
		t.Run(v.name, func(t *testing.T) {
			for _, codec := range []string{"json", "msgpack"} {
				pl := jsonPayload(t, v.payload)
				if codec == "msgpack" {
					var err error
					if pl, err = pl.Convert(wire.PayloadMsgpack); err != nil {
						t.Fatal(err)
					}
				}
				got, err := wire.DecodeInfoProvided(pl)
				if v.badKey != "" {
					var we *wire.Error
					if !errors.As(err, &we) || we.Code != wire.CodeMessageFormatInvalid || we.Details["field"] != v.badKey {
						t.Errorf("%s: %v, want message_format_invalid naming %q", codec, err, v.badKey)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", codec, err)
				}
				if got.TaskID != "t1" || !sameJSON(t, got.Fields, v.fields) {
					t.Errorf("%s: task %q fields %s, want t1 %s", codec, got.TaskID, got.Fields, v.fields)
				}
			}
		})
	}
}

// FuzzDecodeInfoProvided: any payload is decoded or refused with a
// TPError naming a key, and what is decoded has an object of fields.
func FuzzDecodeInfoProvided(f *testing.F) {
	for _, v := range infoVectors {
		f.Add([]byte(v.payload))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pl, err := wire.RawJSONPayload(b)
		if err != nil {
			return // not a payload an envelope can carry
		}
		got, err := wire.DecodeInfoProvided(pl)
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) || we.Details["field"] == nil {
				t.Fatalf("refusal %v names no key", err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if got.TaskID == "" || json.Unmarshal(got.Fields, &obj) != nil || obj == nil {
			t.Fatalf("decoded %q with fields %s", got.TaskID, got.Fields)
		}
	})
}

func jsonPayload(t *testing.T, s string) wire.RawPayload {
	t.Helper()
	pl, err := wire.RawJSONPayload([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
