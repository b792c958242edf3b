package hil_test

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

// hook is a webhook receiver that fails its first failFirst requests
// (with failStatus, by default 503).
type hook struct {
	mu         sync.Mutex
	failFirst  int
	failStatus int
	got        []hookCall
}

type hookCall struct {
	status int
	event  string
	sig    string
	body   []byte
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	status := http.StatusNoContent
	if len(h.got) < h.failFirst {
		status = cmp.Or(h.failStatus, http.StatusServiceUnavailable)
	}
	h.got = append(h.got, hookCall{status: status, event: r.Header.Get(hil.HeaderEvent), sig: r.Header.Get(wire.HeaderSignature), body: body})
	w.WriteHeader(status)
}

func (h *hook) calls() []hookCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

func TestNotifications(t *testing.T) {
	l1, l2 := &hook{failFirst: 1}, &hook{failFirst: 10}
	s1, s2 := httptest.NewServer(l1), httptest.NewServer(l2)
	defer s1.Close()
	defer s2.Close()
	secret := "hook-secret"
	e := newEnvHIL(t, hil.Options{CallbackSecret: secret, Config: hil.Config{Levels: []hil.Level{
		{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 60, NotifyURL: s1.URL + "/l1"},
		{ReviewersScope: auth.ScopeHILL2, DeadlineSeconds: 60, NotifyURL: s2.URL + "/l2"},
	}}})
	id := e.confirm("notify the reviewers?")

	t.Run("retried until delivered", func(t *testing.T) {
		testutil.Eventually(t, pollTimeout, "the first attempt", func() bool { return len(l1.calls()) >= 1 })
		// The retry waits NotifyBackoff on the agent's clock.
		testutil.Eventually(t, pollTimeout, "the retry", func() bool {
			e.clock.Advance(100 * time.Millisecond)
			return len(l1.calls()) >= 2
		})
		calls := l1.calls()
		if calls[0].status != http.StatusServiceUnavailable || calls[1].status != http.StatusNoContent {
			t.Fatalf("statuses = %d, %d; want 503 then 204", calls[0].status, calls[1].status)
		}
		for _, c := range calls {
			if c.event != "hil.created" {
				t.Errorf("%s = %q, want hil.created", hil.HeaderEvent, c.event)
			}
			if err := wire.VerifyHMAC(c.sig, [][]byte{[]byte(secret)}, c.body, e.clock.Now(), time.Hour); err != nil {
				t.Errorf("signature %q: %v", c.sig, err)
			}
			var ev struct {
				Change          string     `json:"change"`
				TaskID          string     `json:"task_id"`
				EscalationLevel int        `json:"escalation_level"`
				ReviewersScope  auth.Scope `json:"reviewers_scope"`
			}
			if err := json.Unmarshal(c.body, &ev); err != nil {
				t.Fatalf("body %s: %v", c.body, err)
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
			return len(l2.calls()) >= hil.NotifyAttempts
		})
		testutil.Eventually(t, pollTimeout, "the notify_failed step", func() bool {
			r, err := e.m.Get(context.Background(), id)
			return err == nil && slices.Contains(stepNames(r), "notify_failed@2")
		})
		if n := len(l2.calls()); n != hil.NotifyAttempts {
			t.Errorf("level 2 got %d attempts, want %d", n, hil.NotifyAttempts)
		}
		if got := l2.calls()[0].event; got != "hil.escalated" {
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
	gone := &hook{failFirst: 10, failStatus: http.StatusGone}
	srv := httptest.NewServer(gone)
	defer srv.Close()
	e := newEnvHIL(t, hil.Options{Config: hil.Config{Levels: []hil.Level{{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 60, NotifyURL: srv.URL + "/gone"}}}})
	id := e.confirm("anyone there?")
	testutil.Eventually(t, pollTimeout, "the notify_failed step", func() bool {
		e.clock.Advance(500 * time.Millisecond)
		r, err := e.m.Get(context.Background(), id)
		return err == nil && slices.Contains(stepNames(r), "notify_failed@1")
	})
	if n := len(gone.calls()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	want := "hil: notifying level 1 failed: notify_url answered 410: refused for good"
	testutil.Eventually(t, pollTimeout, "the task event "+want, func() bool { return slices.Contains(e.logLines(id), want) })
}
