package peer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// scripted is a destination as a transport.Transport: each Send gets the
// next outcome of its script (Delivered once the script is done). No
// server, no socket: the outbox knows only the seam.
type scripted struct {
	mu     sync.Mutex
	script []transport.Outcome
	sent   []transport.Message
}

func (s *scripted) Send(_ context.Context, m *transport.Message) transport.Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, *m)
	if len(s.script) == 0 {
		return transport.Outcome{Class: transport.Delivered, Status: 200}
	}
	o := s.script[0]
	s.script = s.script[1:]
	if o.Err == nil && o.Class != transport.Delivered {
		o.Err = fmt.Errorf("%w: scripted %v", transport.ErrNotDelivered, o.Class)
	}
	return o
}

func (s *scripted) add(o ...transport.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, o...)
}

func (s *scripted) sends() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// TestOutboxFakeTransport: the outbox's retries, back-off, dead letters
// and requeue, against a transport fake (issue #16: "an outbox delivery
// fake in a unit test is just another implementation of the transport
// interface").
func TestOutboxFakeTransport(t *testing.T) {
	clock := newFakeClock()
	fake := &scripted{}
	cfg := testConfig(t)
	p2p := peer.DefaultConfig()
	p2p.MaxRetries = 2
	p2p.RetryBaseDelayMS = 1000
	ag, err := agent.New(cfg, agent.Options{Clock: clock, Transport: fake})
	if err != nil {
		t.Fatal(err)
	}
	if err := handlers.Register(ag, handlers.Options{}); err != nil {
		t.Fatal(err)
	}
	nw, err := peer.New(ag, peer.Options{Config: &p2p})
	if err != nil {
		t.Fatal(err)
	}
	a := &node{Agent: ag, Network: nw}
	ctx := context.Background()
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = a.Close(cctx)
	})

	// hook queues one webhook: the callback of a finished task.
	hook := func(path string) string {
		t.Helper()
		url := "http://192.0.2.10" + path // TEST-NET-1: never dialled
		task, err := a.Submit(ctx, admin, &wire.SubmitRequest{TaskType: "echo", Payload: wire.JSONValue(`{}`), CallbackURL: url}, agent.SubmitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFinal(t, a, task.ID)
		return url
	}
	entry := func(url string, state outbox.State) *peer.OutboxEntry {
		t.Helper()
		items, _, err := a.Outbox().List(peer.OutboxQuery{State: string(state), URL: url})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) == 0 {
			return nil
		}
		return &items[0]
	}
	waitSends := func(n int) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d sends", n), func() bool { return fake.sends() >= n })
	}

	t.Run("retry after, then dead letter", func(t *testing.T) {
		fake.add(
			transport.Outcome{Class: transport.Retry, RetryAfter: time.Hour, Status: 429},
			transport.Outcome{Class: transport.Retry, Unreached: true},
			transport.Outcome{Class: transport.Retry, Status: 503, Unreached: true},
		)
		url := hook("/retried")
		waitSends(1)
		var e *peer.OutboxEntry
		testutil.Eventually(t, 10*time.Second, "the first failure to be recorded", func() bool { e = entry(url, outbox.Pending); return e != nil && e.Attempts == 1 })
		next, err := time.Parse(time.RFC3339Nano, e.NextAttemptAt)
		if err != nil {
			t.Fatal(err)
		}
		if wait := next.Sub(clock.Now()); wait < 59*time.Minute {
			t.Errorf("next attempt in %s, want at least the hour the destination asked for", wait)
		}
		if fake.sends() != 1 {
			t.Fatalf("%d sends before the hour passed, want 1", fake.sends())
		}
		// Each later attempt waits its back-off on the agent's clock.
		for n := 2; n <= 3; n++ {
			clock.Advance(2 * time.Hour)
			waitSends(n)
		}
		testutil.Eventually(t, 10*time.Second, "a dead letter after max_retries", func() bool { return entry(url, outbox.Dead) != nil })
		d := entry(url, outbox.Dead)
		if d.Attempts != 3 || !strings.Contains(d.LastError, "scripted retry") {
			t.Errorf("dead letter: %d attempts, last error %q; want 3 and the transport's error", d.Attempts, d.LastError)
		}
		clock.Advance(24 * time.Hour)
		if fake.sends() != 3 {
			t.Errorf("%d sends, want 3: a dead letter is not sent again by itself", fake.sends())
		}

		// Requeue: the operator's retry sends it again, and it goes.
		if _, err := a.Outbox().Retry(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		waitSends(4)
		testutil.Eventually(t, 10*time.Second, "delivered after the requeue", func() bool { return entry(url, outbox.Pending) == nil && entry(url, outbox.Dead) == nil })
	})

	t.Run("permanent: dead at once", func(t *testing.T) {
		before := fake.sends()
		fake.add(transport.Outcome{Class: transport.Permanent, Status: 410})
		url := hook("/gone")
		waitSends(before + 1)
		testutil.Eventually(t, 10*time.Second, "a dead letter after one refusal", func() bool { return entry(url, outbox.Dead) != nil })
		if d := entry(url, outbox.Dead); d.Attempts != 1 {
			t.Errorf("%d attempts, want 1", d.Attempts)
		}
	})

	t.Run("what the transport was given", func(t *testing.T) {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		for i, m := range fake.sent {
			if m.Kind != transport.Callback || !strings.HasPrefix(m.To, "http://192.0.2.10/") ||
				m.ContentType != wire.ContentJSON || m.Header[transport.HeaderMessageID] == "" || len(m.Body) == 0 {
				t.Errorf("send %d: kind %v to %q type %q header %v", i, m.Kind, m.To, m.ContentType, m.Header)
			}
		}
	})
}
