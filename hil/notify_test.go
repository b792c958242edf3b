package hil_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/hooktest"
	"github.com/synapse-edge/synapse/wire"
)

// failFirst answers the first n calls with status, the others 204.
func failFirst(n, status int) func(int) int {
	return func(call int) int {
		if call < n {
			return status
		}
		return http.StatusNoContent
	}
}

func TestNotifications(t *testing.T) {
	l1 := hooktest.New(t, failFirst(1, http.StatusServiceUnavailable))
	l2 := hooktest.New(t, failFirst(10, http.StatusServiceUnavailable))
	secret := "hook-secret"
	e := newEnvHIL(t, hil.Options{CallbackSecret: secret, Config: hil.Config{Levels: []hil.Level{
		{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 60, NotifyURL: l1.URL + "/l1"},
		{ReviewersScope: auth.ScopeHILL2, DeadlineSeconds: 60, NotifyURL: l2.URL + "/l2"},
	}}})
	id := e.confirm("notify the reviewers?")

	t.Run("retried until delivered", func(t *testing.T) {
		testutil.Eventually(t, pollTimeout, "the first attempt", func() bool { return len(l1.Calls()) >= 1 })
		// The retry waits NotifyBackoff on the agent's clock.
		testutil.Eventually(t, pollTimeout, "the retry", func() bool {
			e.clock.Advance(100 * time.Millisecond)
			return len(l1.Calls()) >= 2
		})
		calls := l1.Calls()
		if calls[0].Status != http.StatusServiceUnavailable || calls[1].Status != http.StatusNoContent {
			t.Fatalf("statuses = %d, %d; want 503 then 204", calls[0].Status, calls[1].Status)
		}
		for _, c := range calls {
			if ev := c.Header.Get(hil.HeaderEvent); ev != "hil.created" {
				t.Errorf("%s = %q, want hil.created", hil.HeaderEvent, ev)
			}
			sig := c.Header.Get(wire.HeaderSignature)
			if err := wire.VerifyHMAC(sig, [][]byte{[]byte(secret)}, c.Body, e.clock.Now(), time.Hour); err != nil {
				t.Errorf("signature %q: %v", sig, err)
			}
			var ev struct {
				Change          string     `json:"change"`
				TaskID          string     `json:"task_id"`
				EscalationLevel int        `json:"escalation_level"`
				ReviewersScope  auth.Scope `json:"reviewers_scope"`
			}
			if err := json.Unmarshal(c.Body, &ev); err != nil {
				t.Fatalf("body %s: %v", c.Body, err)
			}
			if ev.Change != "created" || ev.TaskID != id || ev.EscalationLevel != 1 || ev.ReviewersScope != auth.ScopeHILL1 {
				t.Errorf("body = %+v", ev)
			}
		}
		testutil.Eventually(t, pollTimeout, "the notified step", func() bool {
			r, err := e.m.Get(context.Background(), id)
			return err == nil && slices.Contains(stepNames(r), "notified@1")
		})
	})
	t.Run("given up after the attempts", func(t *testing.T) {
		e.clock.Advance(60 * time.Second) // level 2
		testutil.Eventually(t, pollTimeout, "three attempts at level 2", func() bool {
			e.clock.Advance(500 * time.Millisecond)
			return len(l2.Calls()) >= hil.NotifyAttempts
		})
		testutil.Eventually(t, pollTimeout, "the notify_failed step", func() bool {
			r, err := e.m.Get(context.Background(), id)
			return err == nil && slices.Contains(stepNames(r), "notify_failed@2")
		})
		if n := len(l2.Calls()); n != hil.NotifyAttempts {
			t.Errorf("level 2 got %d attempts, want %d", n, hil.NotifyAttempts)
		}
		if got := l2.Calls()[0].Header.Get(hil.HeaderEvent); got != "hil.escalated" {
			t.Errorf("level 2 event = %q, want hil.escalated", got)
		}
		if r := e.pending(id); r.EscalationLevel != 2 {
			t.Errorf("level = %d, want 2: a failed notification must not change the request", r.EscalationLevel)
		}
	})
	t.Run("task history", func(t *testing.T) {
		// The task's log events are written after the steps.
		for _, want := range []string{"hil: level 1 reviewers notified", "hil: notifying level 2 failed: 3 attempts: notify_url answered 503"} {
			testutil.Eventually(t, pollTimeout, "the task event "+want, func() bool { return slices.Contains(e.logLines(id), want) })
		}
	})
}

// TestNotificationGone: a receiver that answers 410 Gone gets no more
// attempts.
func TestNotificationGone(t *testing.T) {
	gone := hooktest.New(t, failFirst(10, http.StatusGone))
	e := newEnvHIL(t, hil.Options{Config: hil.Config{Levels: []hil.Level{{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 60, NotifyURL: gone.URL + "/gone"}}}})
	id := e.confirm("anyone there?")
	testutil.Eventually(t, pollTimeout, "the notify_failed step", func() bool {
		e.clock.Advance(500 * time.Millisecond)
		r, err := e.m.Get(context.Background(), id)
		return err == nil && slices.Contains(stepNames(r), "notify_failed@1")
	})
	if n := len(gone.Calls()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	want := "hil: notifying level 1 failed: notify_url answered 410: refused for good"
	testutil.Eventually(t, pollTimeout, "the task event "+want, func() bool { return slices.Contains(e.logLines(id), want) })
}
