package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/wire"
)

// TestReportsBeforeTheDelegationIsLive: a delegated task's request leaves
// when the task commits, before the task is live on the requester, so the
// executor's confirm and complete can arrive in between (seen about once
// in 3,000 delegations under load: the requester answered them 202 as late
// reports of an unknown task and dropped them; the task stayed pending
// until its deadline, then failed, while the executor had completed it).
// Here the requester is held in that window until the executor has
// completed the task and had its reports answered, or 2 s: the reports
// must take effect all the same.
func TestReportsBeforeTheDelegationIsLive(t *testing.T) {
	a := peernode.Start(t, peernode.Options{Name: "requester"})
	b := peernode.Start(t, peernode.Options{Name: "executor"})
	peernode.Pair(t, a, b)

	var held atomic.Int32
	agent.SetAfterDelegate(func(id string) {
		if held.Add(1) != 1 {
			return
		}
		// Until the executor completed the task and its outbox is empty
		// (the requester answered both reports), or a bound: a requester
		// that makes the reports wait for the task cannot answer them now.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			task, err := b.Agent.Task(id)
			if err == nil && task.Status == wire.StatusCompleted &&
				len(tasktest.Outbox(t, b.Network, outbox.Pending)) == 0 {
				return
			}
			time.Sleep(5 * time.Millisecond) // the poll interval
		}
	})
	t.Cleanup(func() { agent.SetAfterDelegate(nil) })

	task, err := a.Agent.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "echo",
		Payload: wire.JSONValue(`{"n":1}`), Target: b.ID()}, agent.SubmitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if held.Load() != 1 {
		t.Fatalf("the window was held %d times, want 1", held.Load())
	}
	got, err := a.Agent.Wait(context.Background(), task.ID, 5*time.Second)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got.Status != wire.StatusCompleted {
		t.Fatalf("requester's task is %s (history %v), want completed as on the executor", tasktest.Describe(got), tasktest.Statuses(got))
	}
}
