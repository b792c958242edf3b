package peer_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/wire"
)

// TestRequestRunInline: the executor runs an idempotent handler of a
// peer's request before it stores the request (agent/remote.go,
// runInline). A handler that ends at once is stored final with its whole
// history and its kept progress, and the requester hears every state; a
// failure the same; a handler that outlasts the inline budget is stored
// executing, goes on from there (run once, its progress kept) and
// completes.
func TestRequestRunInline(t *testing.T) {
	var slowRuns atomic.Int32
	quick := agent.Handler{Type: wire.SupportedTaskType{Type: "quick"}, Idempotent: true,
		Func: func(_ context.Context, r *agent.Run) (any, error) {
			r.Progress(50, "half way")
			return map[string]int{"n": 1}, nil
		}}
	broken := agent.Handler{Type: wire.SupportedTaskType{Type: "broken"}, Idempotent: true,
		Func: func(context.Context, *agent.Run) (any, error) { return nil, errors.New("no luck") }}
	slow := agent.Handler{Type: wire.SupportedTaskType{Type: "slow"}, Idempotent: true,
		Func: func(ctx context.Context, r *agent.Run) (any, error) {
			slowRuns.Add(1)
			r.Progress(10, "started")
			select {
			case <-time.After(50 * time.Millisecond): // well past the inline budget
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r.Progress(90, "nearly")
			return map[string]bool{"slow": true}, nil
		}}
	a := startPeer(t, "requester")
	b := startPeerNode(t, peernode.Options{Name: "executor", Handlers: []agent.Handler{quick, broken, slow}})
	pair(t, a, b)
	all := []wire.Status{wire.StatusPending, wire.StatusConfirmed, wire.StatusExecuting}
	progress := func(t *testing.T, id string) []float64 {
		t.Helper()
		var out []float64
		for _, e := range eventsOf(t, b.a, id) {
			if e.Type == wire.EventProgress {
				p, _ := eventData(t, e)["progress"].(float64)
				out = append(out, p)
			}
		}
		return out
	}

	t.Run("ends at once", func(t *testing.T) {
		task := submitTo(t, a, b, "quick", `{}`)
		got := waitFinal(t, a.a, task.ID)
		want := append(all, wire.StatusCompleted)
		if got.Status != wire.StatusCompleted || !slices.Equal(statuses(got), want) {
			t.Fatalf("requester's task: %s, history %v, want %v", describe(got), statuses(got), want)
		}
		remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted)
		if !slices.Equal(statuses(remote), want) {
			t.Errorf("executor's history = %v, want %v", statuses(remote), want)
		}
		if !jsonEqual(t, []byte(resultJSON(got)), []byte(`{"n":1}`)) {
			t.Errorf("result = %s", resultJSON(got))
		}
		if p := progress(t, task.ID); !slices.Equal(p, []float64{50}) {
			t.Errorf("executor's progress events = %v, want [50] (kept during the inline run)", p)
		}
	})
	t.Run("fails at once", func(t *testing.T) {
		task := submitTo(t, a, b, "broken", `{}`)
		got := waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusFailed || got.ErrorCode != wire.CodeExecutionFailed || !slices.Equal(statuses(got), append(all, wire.StatusFailed)) {
			t.Fatalf("requester's task: %s, history %v", describe(got), statuses(got))
		}
	})
	t.Run("outlasts the budget", func(t *testing.T) {
		for i := range 2 { // the second is not run inline (the type is slow now)
			task := submitTo(t, a, b, "slow", `{}`)
			got := waitFinal(t, a.a, task.ID)
			want := append(all, wire.StatusCompleted)
			if got.Status != wire.StatusCompleted || !slices.Equal(statuses(got), want) {
				t.Fatalf("requester's task %d: %s, history %v, want %v", i, describe(got), statuses(got), want)
			}
			remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted)
			if !slices.Equal(statuses(remote), want) {
				t.Errorf("executor's history = %v, want %v", statuses(remote), want)
			}
			if p := progress(t, task.ID); !slices.Equal(p, []float64{10, 90}) {
				t.Errorf("executor's progress events = %v, want [10 90]", p)
			}
			if n := slowRuns.Load(); n != int32(i+1) {
				t.Errorf("the slow handler ran %d times for %d tasks", n, i+1)
			}
		}
	})
}
