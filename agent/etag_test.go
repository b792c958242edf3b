package agent_test

import (
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
