package taskrec_test

import (
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
		if !reflect.DeepEqual(&task, &task2) {
			t.Fatalf("task changed\n%+v\n%+v", &task, &task2)
		}
		evs2, err := taskrec.DecodeEvents(&task2, rest2, 0, 0, nil)
		if err != nil || !reflect.DeepEqual(evs, evs2) {
			t.Fatalf("events changed: %v\n%v\n%v", err, evs, evs2)
		}
	})
}
