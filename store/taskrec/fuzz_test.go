package taskrec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

// FuzzDecode: any bytes decode or fail, never panic; what decodes
// encodes again to a record that decodes to the same task and events.
// Seeded with the test cases (and testdata/fuzz/FuzzDecode).
func FuzzDecode(f *testing.F) {
	for _, c := range cases() {
		b, _ := taskrec.AppendTask(nil, c.task)
		b, _ = taskrec.AppendEvents(b, c.task, c.evs)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var task wire.Task
		rest, err := taskrec.DecodeTask("01a234e3-5f9d-7664-ae78-4e483cc64e8a", b, &task)
		if err != nil {
			return
		}
		evs, err := taskrec.DecodeEvents(&task, rest, 0, 0, nil)
		if err != nil {
			return
		}
		again, err := taskrec.AppendTask(nil, &task)
		if errors.Is(err, taskrec.ErrUnsupported) {
			return
		}
		if err != nil {
			return // a payload that is not JSON, kept as it came
		}
		if again, err = taskrec.AppendEvents(again, &task, evs); err != nil {
			return
		}
		var task2 wire.Task
		rest2, err := taskrec.DecodeTask(task.ID, again, &task2)
		if err != nil {
			t.Fatalf("re-encoded task does not decode: %v", err)
		}
		// A record holds its payload and result as encoding/json writes
		// them (compact, <, > and & escaped); one made by hand need not,
		// and comes back written so, with the events that carry them.
		p, r := normalJSON(task.Payload), normalJSON(task.Result)
		normalised := !bytes.Equal(p, task.Payload) || !bytes.Equal(r, task.Result)
		task.Payload, task.Result = p, r
		if !reflect.DeepEqual(&task, &task2) {
			t.Fatalf("task changed\n%+v\n%+v", &task, &task2)
		}
		evs2, err := taskrec.DecodeEvents(&task2, rest2, 0, 0, nil)
		if err != nil {
			t.Fatalf("re-encoded events do not decode: %v", err)
		}
		if !normalised && !reflect.DeepEqual(evs, evs2) {
			t.Fatalf("events changed\n%v\n%v", evs, evs2)
		}
		// Written once more, nothing changes.
		third, err := taskrec.AppendTask(nil, &task2)
		if err == nil {
			third, err = taskrec.AppendEvents(third, &task2, evs2)
		}
		if err != nil || !bytes.Equal(third, again) {
			t.Fatalf("the record written again differs: %v\n%q\n%q", err, again, third)
		}
	})
}

// normalJSON is v as encoding/json writes it, when v is JSON.
func normalJSON(v wire.JSONValue) wire.JSONValue {
	if len(v) == 0 || !json.Valid(v) {
		return v
	}
	b, err := json.Marshal(json.RawMessage(v))
	if err != nil {
		return v
	}
	return b
}
