package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

func TestEcho(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	payload := `{"msg":"hi","n":[1,2.5,{"deep":true}],"u":"\u00e9"}`
	// Subscribed before the submission: a subscription to the task's id
	// could only begin once Submit returned, when the echo may be done.
	sub := a.SubscribeAll()
	defer sub.Close()
	task := submit(t, a, "echo", payload)
	if task.Status != wire.StatusConfirmed {
		t.Errorf("Submit returned status %s, want confirmed", task.Status)
	}
	if task.Owner != admin.ID || task.Type != "echo" {
		t.Errorf("Submit returned owner %q type %q, want %q echo", task.Owner, task.Type, admin.ID)
	}

	got := waitFinal(t, a, task.ID)
	if got.Status != wire.StatusCompleted {
		t.Fatalf("status = %s (%s), want completed", got.Status, got.ErrorMessage)
	}
	if !jsonEqual(t, got.Result, []byte(payload)) {
		t.Errorf("result = %s, want the payload %s", got.Result, payload)
	}
	if got.Progress != 100 {
		t.Errorf("progress = %d, want 100", got.Progress)
	}
	want := []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}
	if s := statuses(got); !slices.Equal(s, want) {
		t.Errorf("history = %v, want %v", s, want)
	}
	if got.History[0].From != wire.StatusIdle {
		t.Errorf("first transition from %q, want idle", got.History[0].From)
	}
	stored, err := a.Task(task.ID)
	if err != nil {
		t.Fatalf("Task: %v", err)
	}
	if stored.Status != wire.StatusCompleted || stored.Seq != got.Seq {
		t.Errorf("stored task %s seq %d, Wait returned %s seq %d", stored.Status, stored.Seq, got.Status, got.Seq)
	}

	t.Run("events", func(t *testing.T) {
		evs := eventsOf(t, a, task.ID)
		if len(evs) == 0 {
			t.Fatal("no events stored")
		}
		for i, e := range evs {
			if e.Seq != uint64(i+1) {
				t.Errorf("event %d has seq %d, want %d", i, e.Seq, i+1)
			}
			if e.TaskID != task.ID {
				t.Errorf("event %d belongs to %s", e.Seq, e.TaskID)
			}
		}
		last := evs[len(evs)-1]
		if last.Type != wire.EventComplete {
			t.Errorf("last event is %s, want complete", last.Type)
		}
		if last.Seq != stored.Seq {
			t.Errorf("last event seq %d, task seq %d", last.Seq, stored.Seq)
		}
		var types []wire.EventType
		for _, e := range evs {
			types = append(types, e.Type)
		}
		wantTypes := []wire.EventType{wire.EventStatus, wire.EventStatus, wire.EventStatus, wire.EventStatus, wire.EventComplete}
		if !slices.Equal(types, wantTypes) {
			t.Errorf("event types = %v, want %v", types, wantTypes)
		}
		if m := eventData(t, evs[3]); m["status"] != "completed" || m["from"] != "executing" {
			t.Errorf("fourth event data = %v, want executing → completed", m)
		}
		if after, _ := a.Events(task.ID, 3); len(after) != 2 || after[0].Seq != 4 {
			t.Errorf("Events(after 3) = %d events, want seq 4 and 5", len(after))
		}
	})
	t.Run("subscription", func(t *testing.T) {
		// The subscription began before Submit: it gives the task's
		// whole stream, the stored events, in order, ending with complete.
		seen := map[uint64]wire.EventType{}
		for _, e := range eventsOf(t, a, task.ID) {
			seen[e.Seq] = e.Type
		}
		var last uint64
		timeout := time.After(5 * time.Second)
		for done := false; !done; {
			select {
			case e, ok := <-sub.C:
				if !ok {
					t.Fatal("subscription closed before the complete event")
				}
				if e.TaskID != task.ID {
					continue
				}
				if e.Seq <= last {
					t.Errorf("subscription delivered seq %d after %d", e.Seq, last)
				}
				last = e.Seq
				if typ, ok := seen[e.Seq]; !ok || typ != e.Type {
					t.Errorf("subscription event %d %s is not the stored one (%s)", e.Seq, e.Type, typ)
				}
				done = e.Type == wire.EventComplete
			case <-timeout:
				t.Fatal("no complete event on the subscription")
			}
		}
		if last != stored.Seq {
			t.Errorf("subscription ended at seq %d, want %d", last, stored.Seq)
		}
	})
}

func TestSubmitRefusals(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	tests := []struct {
		name string
		req  wire.SubmitRequest
		code wire.ErrorCode
	}{
		{"unknown type", wire.SubmitRequest{TaskType: "teleport", Payload: wire.JSONValue(`{}`)}, wire.CodeCapabilityLacking},
		{"no type", wire.SubmitRequest{Payload: wire.JSONValue(`{}`)}, wire.CodeInvalidParams},
		{"payload not an object", wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`[1]`)}, wire.CodeInvalidParams},
		{"schema violation", wire.SubmitRequest{TaskType: "sleep", Payload: wire.JSONValue(`{"ms":"x"}`)}, wire.CodeValSchema},
		{"below minimum", wire.SubmitRequest{TaskType: "sleep", Payload: wire.JSONValue(`{"ms":-1}`)}, wire.CodeValSchema},
		{"callback not a URL", wire.SubmitRequest{TaskType: "echo", CallbackURL: "not a url"}, wire.CodeInvalidParams},
		{"target", wire.SubmitRequest{TaskType: "echo", Target: "edge_other_abcdef"}, wire.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Submit(context.Background(), admin, &tt.req, agent.SubmitOptions{})
			wantCode(t, err, tt.code)
		})
	}
	t.Run("nothing stored", func(t *testing.T) {
		ts, _, err := a.ListTasks(agent.TaskFilter{})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		if len(ts) != 0 {
			t.Errorf("%d tasks stored after refused submits, want 0", len(ts))
		}
	})
}

func TestSleepInfoNeeded(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	task := submit(t, a, "sleep", `{}`)
	if task.Status != wire.StatusInfoNeeded {
		t.Fatalf("Submit(sleep {}) status = %s, want info_needed", task.Status)
	}
	if len(task.MissingFields) != 1 || task.MissingFields[0].Field != "ms" {
		t.Fatalf("missing_fields = %+v, want [ms]", task.MissingFields)
	}
	if stored, err := a.Task(task.ID); err != nil || stored.Status != wire.StatusInfoNeeded || len(stored.MissingFields) != 1 {
		t.Fatalf("stored task = %+v, %v; want info_needed with missing ms", stored, err)
	}

	t.Run("still missing", func(t *testing.T) {
		got, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"other":1}`))
		if err != nil {
			t.Fatalf("ProvideInfo: %v", err)
		}
		if got.Status != wire.StatusInfoNeeded || len(got.MissingFields) != 1 || got.MissingFields[0].Field != "ms" {
			t.Errorf("after providing an unrelated field: %s %+v, want info_needed [ms]", got.Status, got.MissingFields)
		}
	})
	t.Run("invalid info", func(t *testing.T) {
		_, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":"soon"}`))
		wantCode(t, err, wire.CodeValSchema)
		_, err = a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`[1]`))
		wantCode(t, err, wire.CodeInvalidParams)
		if got, _ := a.Task(task.ID); got.Status != wire.StatusInfoNeeded {
			t.Errorf("after refused info the task is %s, want info_needed", got.Status)
		}
	})
	t.Run("provided", func(t *testing.T) {
		if _, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":1}`)); err != nil {
			t.Fatalf("ProvideInfo: %v", err)
		}
		got := waitFinal(t, a, task.ID)
		if got.Status != wire.StatusCompleted {
			t.Fatalf("status = %s (%s), want completed", got.Status, got.ErrorMessage)
		}
		if !jsonEqual(t, got.Result, []byte(`{"slept_ms":1}`)) {
			t.Errorf("result = %s, want {\"slept_ms\":1}", got.Result)
		}
		if !jsonEqual(t, got.Payload, []byte(`{"ms":1,"other":1}`)) {
			t.Errorf("payload = %s, want the merged fields", got.Payload)
		}
		if len(got.MissingFields) != 0 {
			t.Errorf("missing_fields = %+v after completion", got.MissingFields)
		}
		want := []wire.Status{wire.StatusPending, wire.StatusInfoNeeded, wire.StatusInfoProvided, wire.StatusInfoNeeded,
			wire.StatusInfoProvided, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}
		if s := statuses(got); !slices.Equal(s, want) {
			t.Errorf("history = %v, want %v", s, want)
		}
	})
	t.Run("not waiting for info", func(t *testing.T) {
		_, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":2}`))
		wantCode(t, err, wire.CodeInvalidStateChange)
		_, err = a.ProvideInfo(context.Background(), "no-such-task", wire.JSONValue(`{"ms":2}`))
		wantCode(t, err, wire.CodeTaskNotFound)
	})
}

func TestProvideInfoToRunningTask(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	task := submit(t, a, "sleep", `{"ms":3600000}`)
	waitStatus(t, a, task.ID, wire.StatusExecuting)
	_, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":1}`))
	wantCode(t, err, wire.CodeInvalidStateChange)
	if _, err := a.Cancel(context.Background(), task.ID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
}

func TestMaxConcurrentTasks(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConcurrentTasks = 2
	a := openAgent(t, cfg, newFakeClock())
	first := submit(t, a, "sleep", `{"ms":3600000}`)
	second := submit(t, a, "sleep", `{"ms":3600000}`)

	_, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "sleep", Payload: wire.JSONValue(`{"ms":1}`)}, agent.SubmitOptions{})
	we := wantCode(t, err, wire.CodeRateLimited)
	if got := we.Details["numeric_code"]; got != wire.NumericTooManyTasks {
		t.Errorf("details.numeric_code = %v, want %d", got, wire.NumericTooManyTasks)
	}
	if !we.Retriable {
		t.Error("rate_limited is not retriable")
	}
	ts, _, err := a.ListTasks(agent.TaskFilter{})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	if len(ts) != 2 {
		t.Errorf("%d tasks stored, want 2 (the refused one is not stored)", len(ts))
	}
	if got := metric(t, a, "synapse_tasks_rejected_total"); got != 1 {
		t.Errorf("synapse_tasks_rejected_total = %v, want 1", got)
	}

	// A task waiting for information holds no slot.
	parked := submit(t, a, "sleep", `{}`)
	if parked.Status != wire.StatusInfoNeeded {
		t.Fatalf("parked task is %s, want info_needed", parked.Status)
	}
	_, err = a.ProvideInfo(context.Background(), parked.ID, wire.JSONValue(`{"ms":1}`))
	wantCode(t, err, wire.CodeRateLimited)

	if _, err := a.Cancel(context.Background(), first.ID); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	third := submit(t, a, "sleep", `{"ms":3600000}`)
	if third.Status != wire.StatusConfirmed {
		t.Errorf("submit after a cancel: %s, want confirmed", third.Status)
	}
	_, err = a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo"}, agent.SubmitOptions{})
	wantCode(t, err, wire.CodeRateLimited)
	for _, id := range []string{second.ID, third.ID, parked.ID} {
		if _, err := a.Cancel(context.Background(), id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
	echo := submit(t, a, "echo", `{}`)
	if got := waitFinal(t, a, echo.ID); got.Status != wire.StatusCompleted {
		t.Errorf("echo after cancelling everything: %s", got.Status)
	}
}

func TestCancel(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())

	t.Run("running", func(t *testing.T) {
		task := submit(t, a, "sleep", `{"ms":3600000}`)
		waitStatus(t, a, task.ID, wire.StatusExecuting)
		got, err := a.Cancel(context.Background(), task.ID)
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if got.Status != wire.StatusCancelled {
			t.Fatalf("Cancel returned %s, want cancelled", got.Status)
		}
		want := []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCancelled}
		if s := statuses(got); !slices.Equal(s, want) {
			t.Errorf("history = %v, want %v", s, want)
		}
		again, err := a.Cancel(context.Background(), task.ID)
		if err != nil {
			t.Fatalf("second Cancel: %v", err)
		}
		if again.Status != wire.StatusCancelled || again.Seq != got.Seq {
			t.Errorf("second Cancel = %s seq %d, want the same cancelled task (seq %d)", again.Status, again.Seq, got.Seq)
		}
	})
	t.Run("waiting for info", func(t *testing.T) {
		task := submit(t, a, "sleep", `{}`)
		got, err := a.Cancel(context.Background(), task.ID)
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if got.Status != wire.StatusCancelled {
			t.Errorf("Cancel of a parked task = %s, want cancelled", got.Status)
		}
		_, err = a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":1}`))
		wantCode(t, err, wire.CodeInvalidStateChange)
	})
	t.Run("completed", func(t *testing.T) {
		task := submit(t, a, "echo", `{}`)
		waitFinal(t, a, task.ID)
		_, err := a.Cancel(context.Background(), task.ID)
		wantCode(t, err, wire.CodeTaskAlreadyCompleted)
		if got, _ := a.Task(task.ID); got.Status != wire.StatusCompleted {
			t.Errorf("after a refused cancel the task is %s", got.Status)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		_, err := a.Cancel(context.Background(), "0190d0b5-0000-7000-8000-000000000000")
		wantCode(t, err, wire.CodeTaskNotFound)
		_, err = a.Task("nope")
		wantCode(t, err, wire.CodeTaskNotFound)
	})
}

func TestWaitTimesOut(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	task := submit(t, a, "sleep", `{"ms":3600000}`)
	start := time.Now()
	got, err := a.Wait(context.Background(), task.ID, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got.Status.Terminal() {
		t.Errorf("Wait returned a final state %s for an hour-long sleep", got.Status)
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > 5*time.Second {
		t.Errorf("Wait(50ms) returned after %v", el)
	}
	if _, err := a.Cancel(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
}

func TestListTasksThroughAgent(t *testing.T) {
	a := openAgent(t, testConfig(t), newFakeClock())
	var ids []string
	for range 5 {
		task := submit(t, a, "echo", `{}`)
		waitFinal(t, a, task.ID)
		ids = append(ids, task.ID)
	}
	parked := submit(t, a, "sleep", `{}`)

	ts, next, err := a.ListTasks(agent.TaskFilter{TaskType: "echo", Limit: 3})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	var got []string
	for _, task := range ts {
		got = append(got, task.ID)
	}
	if want := []string{ids[4], ids[3], ids[2]}; !slices.Equal(got, want) || next != ids[2] {
		t.Errorf("first page = %v next %q, want %v next %q", got, next, want, ids[2])
	}
	ts, _, _ = a.ListTasks(agent.TaskFilter{NonTerminal: true})
	if len(ts) != 1 || ts[0].ID != parked.ID {
		t.Errorf("non-terminal tasks = %d, want only the parked one", len(ts))
	}
}

// Capabilities declare what is registered.
func TestCapabilities(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConcurrentTasks = 7
	a := openAgent(t, cfg, nil, agent.Handler{
		Type:        wire.SupportedTaskType{Type: "resize", Description: "Resizes."},
		InputSchema: []byte(`{ "type": "object" }`),
		Func:        func(context.Context, *agent.Run) (any, error) { return nil, nil },
	})
	c := a.Capabilities()
	var types []string
	for _, st := range c.SupportedTaskTypes {
		types = append(types, st.Type)
		if st.Type == "resize" && (st.InputSchema != `{"type":"object"}` || st.Name != "resize") {
			t.Errorf("resize declared as %+v, want compact input_schema and name defaulting to the type", st)
		}
	}
	for _, want := range []string{"echo", "resize", "sleep"} {
		if !slices.Contains(types, want) {
			t.Errorf("supported task types = %v, want %s among them", types, want)
		}
	}
	if !slices.IsSorted(types) {
		t.Errorf("supported task types %v are not sorted", types)
	}
	if c.MaxConcurrentTasks != 7 || c.AgentID != a.Identity().AgentID {
		t.Errorf("capabilities max_concurrent_tasks %d agent %q", c.MaxConcurrentTasks, c.AgentID)
	}
	if !a.SupportsTaskType("resize") || a.SupportsTaskType("teleport") {
		t.Error("SupportsTaskType disagrees with the registered handlers")
	}

}
