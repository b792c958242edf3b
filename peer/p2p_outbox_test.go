package peer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// fastRetries is a short retry schedule: 3 attempts within about 70 ms,
// and heartbeats every second.
func fastRetries() peer.Options {
	c := peer.DefaultConfig()
	c.MaxRetries = 2
	c.RetryBaseDelayMS = 20
	c.HeartbeatIntervalSeconds = 1
	return peer.Options{Config: &c}
}

// requestOrder lists the task ids of the task requests an agent received,
// in the order it received them.
func requestOrder(a *node) []string {
	kept, _ := a.Messages().Since(0)
	var ids []string
	for _, m := range kept {
		if m.Type != wire.MsgTaskRequest {
			continue
		}
		env, err := wire.DecodeEnvelope(m.Raw, m.Msgpack)
		if err != nil {
			continue
		}
		var req wire.TaskRequestPayload
		if env.Payload.Decode(&req) == nil {
			ids = append(ids, req.Task.ID)
		}
	}
	return ids
}

// TestStoreAndForward stops the executor, lets the requester's messages
// run out of retries, and brings the executor back: its heartbeat requeues
// the dead letters, which arrive in order, and each task runs once.
func TestStoreAndForward(t *testing.T) {
	a := startPeerNet(t, "requester", fastRetries())
	b := startPeerNet(t, "executor", fastRetries())
	pair(t, a, b)
	b.stop()

	const n = 6
	var ids []string
	for i := range n {
		ids = append(ids, submitTo(t, a, b, "echo", `{"i":`+string(rune('0'+i))+`}`).ID)
	}

	var dead []peer.OutboxEntry
	testutil.Eventually(t, 10*time.Second, "every request to become a dead letter", func() bool {
		dead = outboxOf(t, a.a, outbox.Dead)
		return len(dead) == n
	})
	t.Run("dead letters", func(t *testing.T) {
		for i, d := range dead {
			if d.ID == "" || d.Peer != b.id() || d.Type != string(wire.MsgTaskRequest) || d.Attempts != 3 || d.LastError == "" || d.DeadAt == "" {
				t.Errorf("dead letter %d = %+v, want a task request to %s after 3 attempts with its last error", i, d, b.id())
			}
		}
		if p := outboxOf(t, a.a, outbox.Pending); len(p) != 0 {
			t.Errorf("pending = %+v, want none", p)
		}
		if got := metric(t, a.a, "synapse_outbox_retries_total"); got < 2*n {
			t.Errorf("synapse_outbox_retries_total = %v, want at least %d", got, 2*n)
		}
		// The counter moves just after the dead letter is stored.
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("synapse_outbox_dead_total to be %d", n), func() bool {
			return metric(t, a.a, "synapse_outbox_dead_total") == n
		})
	})
	t.Run("peer goes offline", func(t *testing.T) {
		testutil.Eventually(t, 10*time.Second, "the stopped executor to be offline after three heartbeat intervals", func() bool {
			p, err := a.a.Pairing().Peer(b.id())
			return err == nil && p.Status == peer.PeerOffline
		})
	})

	b.open()
	t.Run("requeued and delivered in order", func(t *testing.T) {
		for _, id := range ids {
			got := waitFinal(t, a.a, id)
			if got.Status != wire.StatusCompleted || countStatus(got, wire.StatusCompleted) != 1 {
				t.Errorf("task %s: %s with history %v, want completed once", id, describe(got), statuses(got))
			}
		}
		if got := requestOrder(b.a); !slices.Equal(got, ids) {
			t.Errorf("executor received requests %v, want %v (queue order, each once)", got, ids)
		}
		tasks, _, err := b.a.ListTasks(agent.TaskFilter{Limit: 100})
		if err != nil || len(tasks) != n {
			t.Fatalf("executor has %d tasks (%v), want %d", len(tasks), err, n)
		}
		for _, task := range tasks {
			if task.Status != wire.StatusCompleted || countStatus(task, wire.StatusExecuting) != 1 {
				t.Errorf("executor's task %s: %s with history %v, want run once and completed", task.ID, task.Status, statuses(task))
			}
		}
		testutil.Eventually(t, 10*time.Second, "the requester's outbox to be empty", func() bool {
			return len(outboxOf(t, a.a, outbox.Pending))+len(outboxOf(t, a.a, outbox.Dead)) == 0
		})
		if p, err := a.a.Pairing().Peer(b.id()); err != nil || p.Status != peer.PeerOnline {
			t.Errorf("executor's status = %+v (%v), want online", p, err)
		}
	})
}

// TestOutboxAdministration lists, retries and drops dead letters, and a
// peer that is unpaired gets nothing more.
func TestOutboxAdministration(t *testing.T) {
	a := startPeerNet(t, "requester", fastRetries())
	b := startPeerNet(t, "executor", fastRetries())
	pair(t, a, b)
	b.stop()
	ctx := context.Background()
	first := submitTo(t, a, b, "echo", `{"n":1}`)
	second := submitTo(t, a, b, "echo", `{"n":2}`)
	var dead []peer.OutboxEntry
	testutil.Eventually(t, 10*time.Second, "the requests to become dead letters", func() bool {
		dead = outboxOf(t, a.a, outbox.Dead)
		return len(dead) == 2
	})

	t.Run("drop", func(t *testing.T) {
		if err := a.a.Outbox().Drop(ctx, dead[1].ID); err != nil {
			t.Fatalf("DropOutbox: %v", err)
		}
		wantCode(t, a.a.Outbox().Drop(ctx, dead[1].ID), wire.CodeNotFound)
	})
	t.Run("filter by peer", func(t *testing.T) {
		items, _, err := a.a.Outbox().List(peer.OutboxQuery{State: "dead", Peer: "someone-else"})
		if err != nil || len(items) != 0 {
			t.Errorf("dead letters of another peer = %+v (%v), want none", items, err)
		}
		_, _, err = a.a.Outbox().List(peer.OutboxQuery{State: "lost"})
		wantCode(t, err, wire.CodeInvalidParams)
	})
	t.Run("retry one", func(t *testing.T) {
		b.open()
		e, err := a.a.Outbox().Retry(ctx, dead[0].ID)
		if err != nil {
			t.Fatalf("RetryOutbox: %v", err)
		}
		if e.State != "pending" || e.Attempts != 0 {
			t.Errorf("retried item = %+v, want pending with attempts reset", e)
		}
		if got := waitFinal(t, a.a, first.ID); got.Status != wire.StatusCompleted {
			t.Errorf("first task is %s, want completed", got.Status)
		}
		if got, _ := a.a.Task(second.ID); got.Status != wire.StatusPending {
			t.Errorf("second task (its request dropped) is %s, want still pending", got.Status)
		}
		_, err = a.a.Outbox().Retry(ctx, "0190aaaa-0000-7000-8000-000000000000")
		wantCode(t, err, wire.CodeNotFound)
	})
	deadCancel := func(errPart string) func() bool {
		return func() bool {
			for _, d := range outboxOf(t, a.a, outbox.Dead) {
				if d.Type == string(wire.MsgTaskCancel) && d.Attempts == 1 && strings.Contains(d.LastError, errPart) {
					return true
				}
			}
			return false
		}
	}
	t.Run("a refusal the peer marks final is not retried", func(t *testing.T) {
		// The executor never heard of the second task (its request was
		// dropped): it answers the cancel with 404 task_not_found.
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := a.a.Cancel(cctx, second.ID); err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		testutil.Eventually(t, 10*time.Second, "the refused cancel to become a dead letter after one attempt", deadCancel(string(wire.CodeTaskNotFound)))
	})
	t.Run("unpaired peer", func(t *testing.T) {
		if err := a.a.Pairing().RemovePeer(ctx, b.id()); err != nil {
			t.Fatalf("RemovePeer: %v", err)
		}
		wantCode(t, a.a.Pairing().RemovePeer(ctx, b.id()), wire.CodeNotFound)
		_, err := a.a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo", Target: b.id()}, agent.SubmitOptions{})
		wantCode(t, err, wire.CodeInvalidParams)
		n, err := a.a.Outbox().RetryDeadLetters(ctx, b.id(), "")
		if err != nil || n != 1 {
			t.Fatalf("RetryDeadLetters = %d, %v; want 1", n, err)
		}
		testutil.Eventually(t, 10*time.Second, "the message for the unpaired peer to become a dead letter", deadCancel("not a paired peer"))
	})
}
