package agent_test

import (
	"context"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// TestReconfigure: the live fields of a new configuration take effect on
// the running agent — a task over the old max_concurrent_tasks now runs,
// the capabilities say the new limits, a new approval rule holds the
// next submission — and Config reports them.
func TestReconfigure(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxConcurrentTasks = 1
	a := openAgent(t, cfg, newFakeClock())
	first := submit(t, a, "sleep", `{"ms":3600000}`)
	_, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "sleep", Payload: wire.JSONValue(`{"ms":3600000}`)}, agent.SubmitOptions{})
	wantCode(t, err, wire.CodeRateLimited)

	next := a.Config()
	next.MaxConcurrentTasks, next.MaxTaskDurationSeconds = 3, 60
	next.Approvals = []agent.ApprovalRule{{TaskType: "echo", Reason: "a person checks echoes now"}}
	if err := next.Validate(); err != nil {
		t.Fatal(err)
	}
	a.Reconfigure(next)

	second := submit(t, a, "sleep", `{"ms":3600000}`)
	if second.Status != wire.StatusConfirmed {
		t.Errorf("a task over the old limit: %s, want confirmed", second.Status)
	}
	if got := a.Config(); got.MaxConcurrentTasks != 3 || got.MaxTaskDurationSeconds != 60 || len(got.Approvals) != 1 {
		t.Errorf("Config after Reconfigure: %d tasks, %d s, %d approvals; want 3, 60, 1", got.MaxConcurrentTasks, got.MaxTaskDurationSeconds, len(got.Approvals))
	}
	caps := a.Capabilities()
	if caps.MaxConcurrentTasks != 3 || caps.MaxTaskDuration != 60 {
		t.Errorf("capabilities: %d tasks, %d s; want 3 and 60", caps.MaxConcurrentTasks, caps.MaxTaskDuration)
	}
	held := submit(t, a, "echo", `{}`)
	if held.Status != wire.StatusNeedHuman {
		t.Errorf("an echo under the new approval rule: %s, want need_human", held.Status)
	}
	for _, id := range []string{first.ID, second.ID, held.ID} {
		if _, err := a.Cancel(context.Background(), id); err != nil {
			t.Fatalf("Cancel(%s): %v", id, err)
		}
	}
}
