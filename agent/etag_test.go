package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestCompleteEventETag: the complete event shows the finished task with
// the etag GET /task/{id} gives for it, and its parsed result.
func TestCompleteEventETag(t *testing.T) {
	for _, taskType := range []string{"echo", "sleep"} { // inline and queued runs
		t.Run(taskType, func(t *testing.T) {
			a := openAgent(t, testConfig(t), nil)
			task := submit(t, a, taskType, `{"ms":1}`)
			done := waitFinal(t, a, task.ID)
			var complete *wire.Event
			for _, ev := range eventsOf(t, a, task.ID) {
				if ev.Type == wire.EventComplete {
					complete = ev
				}
			}
			if complete == nil {
				t.Fatal("no complete event")
			}
			data := eventData(t, complete)
			if got, want := data["etag"], done.ETag(); got != want {
				t.Errorf("complete event etag = %v, GET etag = %s", got, want)
			}
			if _, ok := data["result"].(map[string]any); !ok {
				t.Errorf("complete event result = %#v, want the parsed object", data["result"])
			}
		})
	}
}

// TestInputSchemaObject: a task type's input_schema (the seed's text) is
// also given parsed, in JSON only.
func TestInputSchemaObject(t *testing.T) {
	a := openAgent(t, testConfig(t), nil)
	caps, err := a.GetCapabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range caps.SupportedTaskTypes {
		if tt.Type != "sleep" {
			continue
		}
		b, err := wire.JSON.Marshal(tt)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			InputSchema       string `json:"input_schema"`
			InputSchemaObject struct {
				Required []string `json:"required"`
			} `json:"input_schema_object"`
		}
		if err := json.Unmarshal(b, &got); err != nil || got.InputSchema == "" || len(got.InputSchemaObject.Required) != 1 || got.InputSchemaObject.Required[0] != "ms" {
			t.Errorf("sleep = %s (%v), want input_schema and its object requiring ms", b, err)
		}
		m, err := wire.Msgpack.Marshal(tt)
		if err != nil || bytes.Contains(m, []byte("input_schema_object")) {
			t.Errorf("msgpack carries input_schema_object (%v)", err)
		}
		return
	}
	t.Fatal("no sleep task type")
}
