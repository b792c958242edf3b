package agent_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

func listIDs(t *testing.T, a *agent.Agent) []string {
	t.Helper()
	ts, _, err := a.ListTasks(agent.TaskFilter{Limit: 1000})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	var ids []string
	for _, task := range ts {
		ids = append(ids, task.ID)
	}
	return ids
}

func runEchoes(t *testing.T, a *agent.Agent, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		task := submit(t, a, "echo", `{}`)
		if got := waitFinal(t, a, task.ID); got.Status != wire.StatusCompleted {
			t.Fatalf("echo: %s", got.Status)
		}
		ids = append(ids, task.ID)
	}
	return ids
}

func TestRetentionKeepFinished(t *testing.T) {
	cfg := testConfig(t)
	cfg.Retention.KeepFinished = 3
	clock := newFakeClock()
	a := openAgent(t, cfg, clock)
	ids := make([]string, 0, 10)
	for range 10 {
		// Finish times must differ for "oldest" to be well defined.
		clock.Advance(time.Second)
		ids = append(ids, runEchoes(t, a, 1)...)
	}
	parked := submit(t, a, "sleep", `{}`)

	if _, err := a.Prune(context.Background()); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	// The background sweep may have pruned some already; together they
	// deleted exactly the 7 oldest.
	if got := metric(t, a, "synapse_tasks_pruned_total"); got != 7 {
		t.Errorf("synapse_tasks_pruned_total = %v, want 7", got)
	}
	want := []string{parked.ID, ids[9], ids[8], ids[7]}
	if got := listIDs(t, a); !slices.Equal(got, want) {
		t.Errorf("tasks after pruning = %v, want the parked one and the 3 newest finished %v", got, want)
	}
	for _, id := range ids[:7] {
		_, err := a.Task(id)
		wantCode(t, err, wire.CodeTaskNotFound)
		if evs, _ := a.Events(id, 0); len(evs) != 0 {
			t.Errorf("pruned task %s still has %d events", id, len(evs))
		}
	}
	if n, err := a.Prune(context.Background()); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v; want 0", n, err)
	}
}

func TestRetentionMaxAge(t *testing.T) {
	cfg := testConfig(t)
	cfg.Retention.MaxAgeHours = 1
	clock := newFakeClock()
	a := openAgent(t, cfg, clock)
	ids := runEchoes(t, a, 3)
	parked := submit(t, a, "sleep", `{}`)

	clock.Advance(59 * time.Minute)
	if n, err := a.Prune(context.Background()); err != nil || n != 0 {
		t.Fatalf("Prune before an hour passed = %d, %v; want 0", n, err)
	}
	if got := listIDs(t, a); len(got) != 4 {
		t.Fatalf("%d tasks before an hour passed, want 4", len(got))
	}
	clock.Advance(2 * time.Hour)
	n, err := a.Prune(context.Background())
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 3 {
		t.Errorf("Prune after 2 h = %d, want 3", n)
	}
	if got := listIDs(t, a); !slices.Equal(got, []string{parked.ID}) {
		t.Errorf("tasks after pruning = %v, want only the parked %s (finished: %v)", got, parked.ID, ids)
	}
}

// TestIdempotentSubmit: a keyed submit's record holds the task (the
// domain answer, no HTTP bytes), replays it, and is pruned after 24 h.
func TestIdempotentSubmit(t *testing.T) {
	clock := newFakeClock()
	a := openAgent(t, testConfig(t), clock)
	r := agent.IdemRequest{Scope: "admin", Key: "k1", Hash: "h1"}
	o := agent.SubmitOptions{Idempotency: &r}
	task, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo"}, o)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	stored := func() string { return a.IdempotentTask("admin", "k1") }
	if got := stored(); got != task.ID {
		t.Errorf("task of the key = %q, want %s", got, task.ID)
	}
	again, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo"}, o)
	if err != nil || !again.Replayed || again.ID != task.ID || again.Status != task.Status || again.Sent != nil {
		t.Errorf("second Submit with the key = %+v, %v; want the first task replayed", again, err)
	}
	if got := listIDs(t, a); len(got) != 1 {
		t.Errorf("%d tasks stored, want 1 (the key's effect happens once)", len(got))
	}

	clock.Advance(agent.IdempotencyTTL - time.Minute)
	if _, err := a.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if stored() == "" {
		t.Errorf("record pruned before 24 h")
	}
	clock.Advance(2 * time.Minute)
	if _, err := a.Prune(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != "" {
		t.Errorf("record after 24 h names task %q, want none", got)
	}
}
