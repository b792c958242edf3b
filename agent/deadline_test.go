package agent_test

import (
	"context"
	"github.com/synapse-edge/synapse/agent"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Deadlines read the injected clock: these tests move it instead of sleeping.

func TestMaxTaskDuration(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxTaskDurationSeconds = 5
	clock := newFakeClock()
	started := make(chan string, 1)
	a := openAgent(t, cfg, clock, blockHandler("block", false, started))
	task := submit(t, a, "block", `{}`)
	<-started
	// The handler runs as soon as executing is applied; the stored state
	// follows at the next commit, which a loaded machine may delay.
	waitStatus(t, a, task.ID, wire.StatusExecuting)

	clock.Advance(4 * time.Second)
	if got, _ := a.Wait(context.Background(), task.ID, 20*time.Millisecond); got.Status != wire.StatusExecuting {
		t.Fatalf("after 4 s of a 5 s limit the task is %s, want executing", got.Status)
	}
	clock.Advance(2 * time.Second)
	got := waitFinal(t, a, task.ID)
	if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeExecutionTimeout {
		t.Fatalf("after 6 s: %s %s (%s), want failed execution_timeout", got.Status, got.ErrorCode, got.ErrorMessage)
	}
	if !got.Recoverable {
		t.Error("execution_timeout is not marked recoverable")
	}
	var errEvent map[string]any
	for _, e := range eventsOf(t, a, task.ID) {
		if e.Type == wire.EventError {
			errEvent = eventData(t, e)
		}
	}
	if errEvent == nil || errEvent["code"] != string(wire.CodeExecutionTimeout) {
		t.Errorf("error event = %v, want code execution_timeout", errEvent)
	}
	// The deadline timer is gone: time passing does not touch the task.
	clock.Advance(time.Hour)
	if again, _ := a.Task(task.ID); again.Seq != got.Seq || again.Status != wire.StatusFailed {
		t.Errorf("an hour after it failed the task is %s seq %d, want failed seq %d", again.Status, again.Seq, got.Seq)
	}
}

func TestTTLWhileRunning(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxTaskDurationSeconds = 5
	clock := newFakeClock()
	started := make(chan string, 1)
	a := openAgent(t, cfg, clock, blockHandler("block", false, started))
	task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "block", TTLSeconds: 2}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	<-started
	clock.Advance(3 * time.Second)
	got := waitFinal(t, a, task.ID)
	if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeTaskExpired {
		t.Fatalf("after 3 s of a 2 s ttl: %s %s (%s), want failed task_expired", got.Status, got.ErrorCode, got.ErrorMessage)
	}
}

func TestTTLWhileWaitingForInfo(t *testing.T) {
	clock := newFakeClock()
	a := openAgent(t, testConfig(t), clock)
	task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "sleep", Payload: wire.JSONValue(`{}`), TTLSeconds: 2}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	if task.Status != wire.StatusInfoNeeded {
		t.Fatalf("Submit status = %s, want info_needed", task.Status)
	}
	// One without a ttl waits for ever.
	forever := submit(t, a, "sleep", `{}`)

	clock.Advance(time.Second)
	if got, _ := a.Task(task.ID); got.Status != wire.StatusInfoNeeded {
		t.Fatalf("after 1 s of a 2 s ttl the task is %s", got.Status)
	}
	clock.Advance(2 * time.Second)
	got := waitFinal(t, a, task.ID)
	if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeTaskExpired {
		t.Fatalf("after 3 s: %s %s, want failed task_expired", got.Status, got.ErrorCode)
	}
	if got.Recoverable {
		t.Error("task_expired is marked recoverable")
	}
	if len(got.MissingFields) != 0 {
		t.Errorf("an expired task still lists missing fields %+v", got.MissingFields)
	}
	clock.Advance(1000 * time.Hour)
	if got, _ := a.Task(forever.ID); got.Status != wire.StatusInfoNeeded {
		t.Errorf("a parked task without ttl is %s after 1000 h, want info_needed", got.Status)
	}
	_, err = a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":1}`))
	wantCode(t, err, wire.CodeInvalidStateChange)
}

// Information that arrives within the ttl lets the task run to completion,
// and no timer left over from the wait touches it afterwards.
func TestTTLStoppedByInfo(t *testing.T) {
	clock := newFakeClock()
	a := openAgent(t, testConfig(t), clock)
	task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "sleep", Payload: wire.JSONValue(`{}`), TTLSeconds: 60}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	clock.Advance(10 * time.Second)
	if _, err := a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":1}`)); err != nil {
		t.Fatalf("ProvideInfo: %v", err)
	}
	got := waitFinal(t, a, task.ID)
	if got.Status != wire.StatusCompleted {
		t.Fatalf("status = %s %s, want completed", got.Status, got.ErrorCode)
	}
	clock.Advance(time.Hour)
	if got, _ := a.Task(task.ID); got.Status != wire.StatusCompleted {
		t.Errorf("a stale ttl timer changed the finished task to %s", got.Status)
	}
}
