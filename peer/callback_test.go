package peer_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

func TestSetCallbackURL(t *testing.T) {
	cfg := testConfig(t)
	cfg.Outbound.Allow = []string{"127.0.0.0/8"} // the hook is on this host
	a := openAgent(t, cfg, nil)
	ctx := context.Background()
	const hook = "http://127.0.0.1:9/hook"
	queued := func() int {
		t.Helper()
		items, _, err := a.Outbox().List(peer.OutboxQuery{URL: hook})
		if err != nil {
			t.Fatalf("Outbox: %v", err)
		}
		return len(items)
	}

	t.Run("running task: the callback is queued when it ends", func(t *testing.T) {
		task := submit(t, a, "sleep", `{"ms":100}`)
		got, err := a.SetCallbackURL(ctx, task.ID, hook)
		if err != nil {
			t.Fatal(err)
		}
		if got.CallbackURL != hook {
			t.Errorf("CallbackURL = %q, want %q", got.CallbackURL, hook)
		}
		evs, err := a.Events(task.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The task's own executing transition may be written before or
		// after the change: look for the change's log event among them.
		logged := false
		for _, e := range evs {
			logged = logged || e.Type == wire.EventLog
		}
		if !logged {
			t.Errorf("events %v lack the log event of the change", evs)
		}
		if final := waitFinal(t, a, task.ID); final.Status != wire.StatusCompleted {
			t.Fatalf("status = %s", final.Status)
		}
		testutil.Eventually(t, 10*time.Second, "one webhook to be queued", func() bool { return queued() == 1 })
	})
	t.Run("final task: unchanged, nothing queued", func(t *testing.T) {
		task := submit(t, a, "echo", `{}`)
		waitFinal(t, a, task.ID)
		got, err := a.SetCallbackURL(ctx, task.ID, hook)
		if err != nil || got.CallbackURL != "" {
			t.Fatalf("SetCallbackURL = %+v, %v; want the task unchanged", got, err)
		}
		if n := queued(); n != 1 {
			t.Errorf("queued = %d, want still 1", n)
		}
	})
	t.Run("bad url and unknown task", func(t *testing.T) {
		task := submit(t, a, "sleep", `{"ms":50}`)
		_, err := a.SetCallbackURL(ctx, task.ID, "ftp://x")
		wantCode(t, err, wire.CodeInvalidParams)
		_, err = a.SetCallbackURL(ctx, "nope", hook)
		wantCode(t, err, wire.CodeTaskNotFound)
	})
}
