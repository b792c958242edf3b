package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// An Immediate handler runs on the caller's goroutine in the sync mode;
// what is stored and published is what the same handler run on its own
// goroutine gives: the same states, events and event data.
func TestImmediateHandlerSameEvents(t *testing.T) {
	work := func(ctx context.Context, r *agent.Run) (any, error) {
		r.Progress(40, "half")
		r.Log("a line")
		return r.Payload(), nil
	}
	handler := func(typ string, immediate bool) agent.Handler {
		return agent.Handler{Type: wire.SupportedTaskType{Type: typ}, Idempotent: true, Immediate: immediate, Func: work}
	}
	a := openAgent(t, testConfig(t), newFakeClock(), handler("now", true), handler("later", false))
	shape := func(typ string) []string {
		t.Helper()
		task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: typ, Payload: wire.JSONValue(`{"x":1}`)}, agent.SubmitOptions{Wait: 5 * time.Second})
		if err != nil || task.Status != wire.StatusCompleted || string(task.Result) != `{"x":1}` {
			t.Fatalf("SubmitWait(%s) = %+v, %v; want completed with the payload", typ, task, err)
		}
		evs, err := a.Events(task.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, e := range evs {
			if e.Seq != uint64(i+1) {
				t.Errorf("%s: event %d has seq %d", typ, i, e.Seq)
			}
			data := strings.ReplaceAll(string(e.Data), task.ID, "ID")
			data = strings.ReplaceAll(data, typ, "TYPE")
			out = append(out, string(e.Type)+" "+data)
		}
		return out
	}
	now, later := shape("now"), shape("later")
	if len(now) != 7 {
		t.Errorf("immediate handler: %d events, want 7 (3 status, progress, log, status, complete): %q", len(now), now)
	}
	if strings.Join(now, "\n") != strings.Join(later, "\n") {
		t.Errorf("events differ:\nimmediate:\n%s\non its goroutine:\n%s", strings.Join(now, "\n"), strings.Join(later, "\n"))
	}
}
