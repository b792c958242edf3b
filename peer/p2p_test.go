package peer_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/peer/peerdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// submitTo submits a task on a with b as its target.
func submitTo(t *testing.T, a, b *peerNode, taskType, payload string) *wire.Task {
	t.Helper()
	task, err := a.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: taskType, Payload: wire.JSONValue(payload), Target: b.id()}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit(%s → %s): %v", taskType, b.cfg.AgentName, err)
	}
	if task.Status != wire.StatusPending || task.Target != b.id() {
		t.Fatalf("submitted task is %s for %q, want pending for %s", task.Status, task.Target, b.id())
	}
	return task.Task
}

// resultJSON is the result_json field of the task's full answer.
func resultJSON(task *wire.Task) string {
	if r := task.StatusResponse(true).ResultJSON; r != nil {
		return *r
	}
	return ""
}

// countStatus counts the transitions into s in a task's history.
func countStatus(task *wire.Task, s wire.Status) int {
	n := 0
	for _, h := range task.History {
		if h.Status == s {
			n++
		}
	}
	return n
}

// TestDelegation runs the four flows of seed 004 §4 between two agents
// talking over HTTP.
func TestDelegation(t *testing.T) {
	a := startPeer(t, "requester")
	b := startPeer(t, "executor")
	pair(t, a, b)

	t.Run("echo", func(t *testing.T) {
		task := submitTo(t, a, b, "echo", `{"msg":"hello","n":[1,2]}`)
		got := waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusCompleted {
			t.Fatalf("requester's task is %s (%s), want completed", got.Status, describe(got))
		}
		if want := []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting, wire.StatusCompleted}; !slices.Equal(statuses(got), want) {
			t.Errorf("requester's history = %v, want %v", statuses(got), want)
		}
		remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted)
		if remote.Origin == nil || remote.Origin.Peer != a.id() {
			t.Errorf("executor's task origin = %+v, want peer %s", remote.Origin, a.id())
		}
		gotRes, wantRes := resultJSON(got), resultJSON(remote)
		if gotRes == "" || gotRes != wantRes {
			t.Errorf("result_json on the requester = %q, on the executor %q", gotRes, wantRes)
		}
		if !jsonEqual(t, []byte(gotRes), []byte(`{"msg":"hello","n":[1,2]}`)) {
			t.Errorf("result_json = %s, want the echoed payload", gotRes)
		}
	})

	t.Run("info", func(t *testing.T) {
		task := submitTo(t, a, b, "sleep", `{}`)
		got := waitStatus(t, a.a, task.ID, wire.StatusInfoNeeded)
		if len(got.MissingFields) != 1 || got.MissingFields[0].Field != "ms" {
			t.Fatalf("requester's missing_fields = %+v, want ms", got.MissingFields)
		}
		if _, err := a.a.ProvideInfo(context.Background(), task.ID, wire.JSONValue(`{"ms":5}`)); err != nil {
			t.Fatalf("ProvideInfo: %v", err)
		}
		got = waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"slept_ms":5}`)) {
			t.Fatalf("requester's task is %s with result %s, want completed {\"slept_ms\":5}", got.Status, got.Result)
		}
		if remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted); !jsonEqual(t, remote.Payload, []byte(`{"ms":5}`)) {
			t.Errorf("executor's payload = %s, want the provided field merged", remote.Payload)
		}
	})

	human := func(t *testing.T, action string, want wire.Status) {
		task := submitTo(t, a, b, "confirm", `{"question":"ship it?"}`)
		got := waitStatus(t, a.a, task.ID, wire.StatusNeedHuman)
		if got.Human == nil || got.Human.TaskID != task.ID || got.Human.Reason.Message != "ship it?" {
			t.Fatalf("requester's human payload = %+v, want the executor's question", got.Human)
		}
		// Seed 004 §6.8: the deadline (the task's, which the request
		// carried) and the options, though the handler named neither.
		if got.Human.Deadline == "" || got.Human.Deadline != wire.FormatTime(got.Deadline) {
			t.Errorf("need_human deadline = %q, want the task's deadline %s", got.Human.Deadline, wire.FormatTime(got.Deadline))
		}
		var opts []any
		for _, o := range got.Human.Options {
			opts = append(opts, o.Value)
		}
		if !slices.Equal(opts, []any{"approve", "reject"}) {
			t.Errorf("need_human options = %+v, want approve and reject", got.Human.Options)
		}
		if _, err := a.a.Decide(context.Background(), admin, task.ID, agent.DecisionRequest{Action: action, Notes: "by test"}); err != nil {
			t.Fatalf("Decide(%s): %v", action, err)
		}
		got = waitFinal(t, a.a, task.ID)
		if got.Status != want {
			t.Fatalf("requester's task is %s (%s), want %s", got.Status, describe(got), want)
		}
		if remote := waitStatus(t, b.a, task.ID, want); want == wire.StatusCompleted {
			var res struct {
				Action string `json:"action"`
			}
			if err := json.Unmarshal(remote.Result, &res); err != nil || res.Action != action {
				t.Errorf("executor's result = %s, want the decision %q", remote.Result, action)
			}
		}
	}
	t.Run("human approves", func(t *testing.T) { human(t, agent.ActionApprove, wire.StatusCompleted) })
	t.Run("human rejects", func(t *testing.T) { human(t, agent.ActionReject, wire.StatusRejected) })

	t.Run("cancel", func(t *testing.T) {
		task := submitTo(t, a, b, "sleep", `{"ms":60000}`)
		waitStatus(t, b.a, task.ID, wire.StatusExecuting)
		got, err := a.a.Cancel(context.Background(), task.ID)
		if err != nil {
			t.Fatalf("Cancel: %v", err)
		}
		if got.Status != wire.StatusCancelled {
			got = waitFinal(t, a.a, task.ID)
		}
		if got.Status != wire.StatusCancelled {
			t.Fatalf("requester's task is %s, want cancelled", got.Status)
		}
		waitStatus(t, b.a, task.ID, wire.StatusCancelled)
	})

	t.Run("unknown task type is rejected", func(t *testing.T) {
		task := submitTo(t, a, b, "teleport", `{}`)
		got := waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusRejected || got.ErrorCode != wire.CodeCapabilityLacking {
			t.Fatalf("requester's task is %s %s, want rejected capability_lacking", got.Status, got.ErrorCode)
		}
	})

	t.Run("peers are online", func(t *testing.T) {
		for _, n := range []*peerNode{a, b} {
			ps := n.a.Pairing().Peers()
			if len(ps) != 1 || ps[0].Status != peer.PeerOnline || ps[0].LastSeen == "" {
				t.Errorf("%s peers = %+v, want one online peer", n.cfg.AgentName, ps)
			}
		}
	})

	t.Run("outboxes drain", func(t *testing.T) {
		for _, n := range []*peerNode{a, b} {
			testutil.Eventually(t, 10*time.Second, n.cfg.AgentName+"'s outbox to drain", func() bool {
				return len(outboxOf(t, n.a, outbox.Pending)) == 0
			})
			if dead := outboxOf(t, n.a, outbox.Dead); len(dead) != 0 {
				t.Errorf("%s has dead letters: %+v", n.cfg.AgentName, dead)
			}
		}
	})
}

// peerKey reads the private key an agent keeps in its data directory.
func peerKey(t *testing.T, n *peerNode) ed25519.PrivateKey {
	t.Helper()
	return tasktest.Key(t, n.cfg.DataDir)
}

// TestSeenMessagesExpire: received message ids are kept for 7 days, far
// beyond the replay window, and then pruned by the retention sweep.
func TestSeenMessagesExpire(t *testing.T) {
	clock := newFakeClock()
	a := startPeerWith(t, "receiver", agent.Options{Clock: clock})
	b := startPeer(t, "sender")
	pair(t, a, b)
	me := b.a.Identity()
	payload, err := wire.NewJSONPayload(&wire.HeartbeatPayload{Status: peer.PeerOnline, MaxTasks: 10})
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(wire.MsgHeartbeat, wire.AgentRef{AgentID: me.AgentID}, wire.AgentRef{AgentID: a.id()}, payload, clock.Now())
	if err := wire.Sign(m, peerKey(t, b)); err != nil {
		t.Fatal(err)
	}
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(a.url()+peer.MessagePath, wire.ContentJSON, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("heartbeat answered %d, want 202", resp.StatusCode)
	}
	seen := func() bool {
		var ok bool
		_ = a.a.Store().View(func(tx *store.Tx) error { ok = peerdb.Seen(tx, m.MessageID); return nil })
		return ok
	}
	testutil.Eventually(t, 10*time.Second, "the message id to be recorded", seen)
	for _, step := range []struct {
		advance time.Duration
		want    bool
	}{{6 * 24 * time.Hour, true}, {25 * time.Hour, false}} {
		clock.Advance(step.advance)
		if _, err := a.a.Prune(context.Background()); err != nil {
			t.Fatalf("Prune: %v", err)
		}
		if got := seen(); got != step.want {
			t.Errorf("after %v more: seen = %v, want %v", step.advance, got, step.want)
		}
	}
}
