package wire_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// EventDataJSON writes what json.Marshal writes for every kind of event data.
func TestEventData(t *testing.T) {
	odd := "a\"b\\c\n\x00 <x> & \u2028 é \xff"
	task := &wire.Task{ID: "id-" + odd, Type: "echo", Status: wire.StatusCompleted, Payload: wire.JSONValue(`{"a":"<b>"}`),
		Result: wire.JSONValue(`{"x":1}`), CreatedAt: time.Unix(1e9, 5e6), UpdatedAt: time.Unix(1e9, 7e6), Seq: 3,
		History: []wire.Transition{{Status: wire.StatusPending, At: wire.Time{Time: time.Unix(1e9, 0)}, Reason: odd}}}
	for _, data := range []any{
		&wire.StatusEventData{From: wire.StatusPending, Message: odd, Progress: 7, Status: wire.StatusConfirmed, TaskID: task.ID},
		&wire.StatusEventData{},
		&wire.ErrorEventData{Code: wire.CodeExecutionFailed, Message: odd, Recoverable: true, TaskID: task.ID},
		&wire.ErrorEventData{},
		&wire.ErrorEventData{Code: wire.CodeExecutionTimeout, Message: odd, NumericCode: wire.NumericTaskTooLong, TaskID: task.ID},
		&wire.ProgressEventData{Message: odd, Progress: -1, TaskID: task.ID},
		&wire.LogEventData{Line: odd, TaskID: task.ID},
		task.StatusResponse(true),
		task.StatusResponse(false),
		map[string]any{"task_id": "x", "progress": 3},
	} {
		want, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := wire.EventDataJSON(data)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%T: %v\n got %s\nwant %s", data, err, got, want)
		}
	}
}
