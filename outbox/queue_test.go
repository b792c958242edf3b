package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/transporttest"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// TestQueueFakeTransport: the queue's retries, back-off, dead letters and
// requeue of webhooks, against a transport fake (issue #16: "an outbox
// delivery fake in a unit test is just another implementation of the
// transport interface").
func TestQueueFakeTransport(t *testing.T) {
	fake := &transporttest.Scripted{}
	secret := []byte("s3cret")
	f := startQueue(t, outbox.Options{Transport: fake, Secret: secret, MaxRetries: 2, RetryBase: time.Second})
	ctx := context.Background()
	waitSends := func(n int) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%d sends", n), func() bool { return fake.Sends() >= n })
	}
	const base = "http://192.0.2.10" // TEST-NET-1: never dialled

	t.Run("retry after, then dead letter", func(t *testing.T) {
		fake.Add(
			transport.Outcome{Class: transport.Retry, RetryAfter: time.Hour, Status: 429},
			transport.Outcome{Class: transport.Retry, Unreached: true},
			transport.Outcome{Class: transport.Retry, Status: 503, Unreached: true},
		)
		url := base + "/retried"
		f.enqueue(t, hook(url))
		waitSends(1)
		var e *outbox.Entry
		testutil.Eventually(t, 10*time.Second, "the first failure to be recorded", func() bool {
			e = f.entry(t, outbox.Query{URL: url})
			return e != nil && e.Attempts == 1
		})
		next, err := time.Parse(time.RFC3339Nano, e.NextAttemptAt)
		if err != nil {
			t.Fatal(err)
		}
		if wait := next.Sub(f.clock.Now()); wait < 59*time.Minute {
			t.Errorf("next attempt in %s, want at least the hour the destination asked for", wait)
		}
		if fake.Sends() != 1 {
			t.Fatalf("%d sends before the hour passed, want 1", fake.Sends())
		}
		// Each later attempt waits its back-off on the queue's clock.
		for n := 2; n <= 3; n++ {
			f.advanceUntil(t, 2*time.Hour, fmt.Sprintf("%d sends", n), func() bool { return fake.Sends() >= n })
		}
		testutil.Eventually(t, 10*time.Second, "a dead letter after max_retries", func() bool {
			return f.entry(t, outbox.Query{State: "dead", URL: url}) != nil
		})
		d := f.entry(t, outbox.Query{State: "dead", URL: url})
		if d.Attempts != 3 || !strings.Contains(d.LastError, "scripted retry") || d.DeadAt == "" {
			t.Errorf("dead letter: %d attempts, last error %q, dead at %q; want 3 and the transport's error", d.Attempts, d.LastError, d.DeadAt)
		}
		f.clock.Advance(24 * time.Hour)
		if fake.Sends() != 3 {
			t.Errorf("%d sends, want 3: a dead letter is not sent again by itself", fake.Sends())
		}
		testutil.Eventually(t, 10*time.Second, "the counters", func() bool {
			return f.m.Retries.Value() == 2 && f.m.Dead.Value() == 1 && f.m.Queued.Value() == 1
		})

		// Requeue: the operator's retry sends it again, and it goes.
		e, err = f.q.Retry(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.State != "pending" || e.Attempts != 0 {
			t.Errorf("retried item = %+v, want pending with attempts reset", e)
		}
		waitSends(4)
		testutil.Eventually(t, 10*time.Second, "delivered after the requeue", func() bool {
			return f.entry(t, outbox.Query{URL: url}) == nil && f.entry(t, outbox.Query{State: "dead", URL: url}) == nil &&
				f.m.Delivered.Value() == 1
		})
	})

	t.Run("permanent: dead at once", func(t *testing.T) {
		before := fake.Sends()
		fake.Add(transport.Outcome{Class: transport.Permanent, Status: 410})
		url := base + "/gone"
		f.enqueue(t, hook(url))
		waitSends(before + 1)
		testutil.Eventually(t, 10*time.Second, "a dead letter after one refusal", func() bool {
			return f.entry(t, outbox.Query{State: "dead", URL: url}) != nil
		})
		if d := f.entry(t, outbox.Query{State: "dead", URL: url}); d.Attempts != 1 {
			t.Errorf("%d attempts, want 1", d.Attempts)
		}
		if n := f.q.Count(outbox.Dead); n != 1 {
			t.Errorf("Count(dead) = %d, want 1", n)
		}
	})

	t.Run("what the transport was given", func(t *testing.T) {
		for i, m := range fake.Sent() {
			if m.Kind != transport.Callback || !strings.HasPrefix(m.To, base+"/") ||
				m.ContentType != wire.ContentJSON || m.Header[transport.HeaderMessageID] == "" || len(m.Body) == 0 || m.MaxReply != 64<<10 {
				t.Errorf("send %d: kind %v to %q type %q header %v max reply %d", i, m.Kind, m.To, m.ContentType, m.Header, m.MaxReply)
			}
			sig := m.Header[transport.HeaderSignature]
			if err := wire.VerifyHMAC(sig, [][]byte{secret}, m.Body, f.clock.Now(), 365*24*time.Hour); err != nil {
				t.Errorf("send %d: signature %q: %v", i, sig, err)
			}
		}
	})
}

// TestQueueHeadOfLine: a webhook's messages go in queue order, nothing
// behind a failed head goes before it, and a type Options.Deliver holds
// goes through its delivery.
func TestQueueHeadOfLine(t *testing.T) {
	fake := &transporttest.Scripted{}
	var mu sync.Mutex
	var pushed []string
	push := func(_ context.Context, it *outbox.Item) *outbox.Failure {
		mu.Lock()
		defer mu.Unlock()
		pushed = append(pushed, it.ID)
		return nil
	}
	f := startQueue(t, outbox.Options{Transport: fake, MaxRetries: 5, RetryBase: time.Second,
		Deliver: map[string]func(context.Context, *outbox.Item) *outbox.Failure{"a2a_push": push}})
	const url = "http://192.0.2.10/ordered"
	fake.Add(transport.Outcome{Class: transport.Retry, Unreached: true})
	var ids []string
	update(t, f.db, func(tx *store.Tx) error {
		for i := range 4 {
			m := hook(url)
			m.Payload = map[string]int{"i": i}
			id, err := f.q.Enqueue(tx, m)
			ids = append(ids, id)
			if err != nil {
				return err
			}
		}
		return nil
	})
	testutil.Eventually(t, 10*time.Second, "the head's failure", func() bool {
		e := f.entry(t, outbox.Query{URL: url})
		return e != nil && e.Attempts == 1
	})
	if n := fake.Sends(); n != 1 {
		t.Fatalf("%d sends while the head waits, want 1", n)
	}
	f.advanceUntil(t, time.Hour, "all four delivered", func() bool { return f.q.Count(outbox.Pending) == 0 })
	var got []string
	for _, m := range fake.Sent() {
		got = append(got, m.Header[transport.HeaderMessageID])
	}
	if want := append([]string{ids[0]}, ids...); !slices.Equal(got, want) {
		t.Errorf("sent %v, want %v (the head twice, then in queue order)", got, want)
	}

	pid := f.enqueue(t, outbox.Message{URL: url, Type: "a2a_push", Payload: map[string]string{}})
	testutil.Eventually(t, 10*time.Second, "the push delivered", func() bool { return f.q.Count(outbox.Pending) == 0 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(pushed, []string{pid}) || fake.Sends() != 5 {
		t.Errorf("pushed %v, %d sends; want [%s] through Deliver, not the webhook", pushed, fake.Sends(), pid)
	}
}

// fakePeers is outbox.Peers: it records each round and answers from a
// script of failures (nil: delivered).
type fakePeers struct {
	mu         sync.Mutex
	size       int
	concurrent bool
	readAhead  int
	rounds     [][]string // item ids per round
	fail       []*outbox.Failure
	ctx        context.Context
}

func (p *fakePeers) ReadAhead(string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readAhead
}

func (p *fakePeers) Window(string) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size, p.concurrent
}

func (p *fakePeers) Send(ctx context.Context, dest, peer string, items []*outbox.Item, concurrent bool) []*outbox.Failure {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ctx = ctx
	var ids []string
	out := make([]*outbox.Failure, len(items))
	for i, it := range items {
		ids = append(ids, it.ID)
		if it.Peer != peer || dest != outbox.PeerDest(peer) || concurrent != p.concurrent {
			out[i] = &outbox.Failure{Err: errors.New("wrong round"), Permanent: true}
			continue
		}
		if len(p.fail) > 0 {
			out[i], p.fail = p.fail[0], p.fail[1:]
		}
	}
	p.rounds = append(p.rounds, ids)
	return out
}

func (p *fakePeers) roundSizes() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n []int
	for _, r := range p.rounds {
		n = append(n, len(r))
	}
	return n
}

// TestQueuePeers: rounds to a peer follow its window, an unreachable
// peer's dead letters come back, in order, when Wake says it was heard
// from, and without Peers a peer's message is given up.
func TestQueuePeers(t *testing.T) {
	t.Run("windows", func(t *testing.T) {
		peers := &fakePeers{size: 4, concurrent: true}
		f := startQueue(t, outbox.Options{Transport: &transporttest.Scripted{}, Peers: peers, MaxRetries: 5, RetryBase: time.Second})
		update(t, f.db, func(tx *store.Tx) error {
			for range 10 {
				if _, err := f.q.Enqueue(tx, outbox.Message{Peer: "b", Type: "p2p:task_request", Payload: map[string]string{}}); err != nil {
					return err
				}
			}
			return nil
		})
		testutil.Eventually(t, 10*time.Second, "ten delivered", func() bool { return f.q.Count(outbox.Pending) == 0 })
		if got := peers.roundSizes(); !slices.Equal(got, []int{4, 4, 2}) {
			t.Errorf("rounds of %v, want [4 4 2]", got)
		}
		testutil.Eventually(t, 10*time.Second, "the counters", func() bool {
			return f.m.FullWindows.Value() == 2 && f.m.Delivered.Value() == 10
		})
		if peers.ctx == nil || peers.ctx.Err() != nil {
			t.Errorf("Send's context %v, want the queue's, live", peers.ctx)
		}
	})
	t.Run("a failure in a window", func(t *testing.T) {
		nope := &outbox.Failure{Err: errors.New("nope"), RetryAfter: time.Minute}
		peers := &fakePeers{size: 8, concurrent: true, fail: []*outbox.Failure{nil, nope, outbox.NotSent()}}
		f := startQueue(t, outbox.Options{Transport: &transporttest.Scripted{}, Peers: peers, MaxRetries: 5, RetryBase: time.Millisecond})
		update(t, f.db, func(tx *store.Tx) error {
			for range 3 {
				if _, err := f.q.Enqueue(tx, outbox.Message{Peer: "b", Type: "p2p:task_request", Payload: map[string]string{}}); err != nil {
					return err
				}
			}
			return nil
		})
		testutil.Eventually(t, 10*time.Second, "the second to wait for its retry", func() bool {
			e := f.entry(t, outbox.Query{Peer: "b"})
			return e != nil && e.Attempts == 1 && f.q.Count(outbox.Pending) == 2
		})
		e := f.entry(t, outbox.Query{Peer: "b"})
		if e.LastError != "nope" {
			t.Errorf("head %+v, want the first failure's error (the later one only waited for it)", e)
		}
		f.advanceUntil(t, time.Minute, "the rest delivered", func() bool { return f.q.Count(outbox.Pending) == 0 })
		if got := peers.roundSizes(); !slices.Equal(got, []int{3, 2}) {
			t.Errorf("rounds of %v, want [3 2]", got)
		}
	})
	t.Run("unreachable, then heard from", func(t *testing.T) {
		away := &outbox.Failure{Err: errors.New("connection refused"), Unreachable: true}
		peers := &fakePeers{size: 1, fail: []*outbox.Failure{away, away}}
		f := startQueue(t, outbox.Options{Transport: &transporttest.Scripted{}, Peers: peers, MaxRetries: 0, RetryBase: time.Second})
		first := f.enqueue(t, outbox.Message{Peer: "b", Type: "p2p:task_request", Payload: map[string]int{"n": 1}})
		testutil.Eventually(t, 10*time.Second, "the first to give up", func() bool { return f.q.Count(outbox.Dead) == 1 })
		second := f.enqueue(t, outbox.Message{Peer: "b", Type: "p2p:task_request", Payload: map[string]int{"n": 2}})
		testutil.Eventually(t, 10*time.Second, "the second to give up", func() bool { return f.q.Count(outbox.Dead) == 2 })
		third := f.enqueue(t, outbox.Message{Peer: "b", Type: "p2p:task_request", Payload: map[string]int{"n": 3}})
		testutil.Eventually(t, 10*time.Second, "the third delivered", func() bool { return len(peers.roundSizes()) == 3 })
		f.q.Wake("b")
		testutil.Eventually(t, 10*time.Second, "the dead letters requeued and delivered", func() bool {
			return f.q.Count(outbox.Dead)+f.q.Count(outbox.Pending) == 0
		})
		peers.mu.Lock()
		defer peers.mu.Unlock()
		var got []string
		for _, r := range peers.rounds {
			got = append(got, r...)
		}
		if want := []string{first, second, third, first, second}; !slices.Equal(got, want) {
			t.Errorf("sent %v, want %v", got, want)
		}
	})
	t.Run("refused: not requeued by Wake", func(t *testing.T) {
		peers := &fakePeers{size: 1, fail: []*outbox.Failure{{Err: errors.New("refused"), Permanent: true, Unreachable: true}}}
		f := startQueue(t, outbox.Options{Transport: &transporttest.Scripted{}, Peers: peers, MaxRetries: 5, RetryBase: time.Second})
		f.enqueue(t, outbox.Message{Peer: "b", Type: "p2p:task_cancel", Payload: map[string]string{}})
		testutil.Eventually(t, 10*time.Second, "a dead letter", func() bool { return f.q.Count(outbox.Dead) == 1 })
		f.q.Wake("b")
		f.q.Drain(context.Background())
		if n := f.q.Count(outbox.Dead); n != 1 || len(peers.roundSizes()) != 1 {
			t.Errorf("%d dead letters after Wake, %d rounds; want the refused one kept", n, len(peers.roundSizes()))
		}
		n, err := f.q.RetryDeadLetters(context.Background(), "b", "")
		if err != nil || n != 1 {
			t.Fatalf("RetryDeadLetters = %d, %v; want 1", n, err)
		}
		testutil.Eventually(t, 10*time.Second, "delivered after the operator's retry", func() bool {
			return f.q.Count(outbox.Dead)+f.q.Count(outbox.Pending) == 0
		})
	})
	t.Run("no peers", func(t *testing.T) {
		f := startQueue(t, outbox.Options{Transport: &transporttest.Scripted{}, MaxRetries: 5, RetryBase: time.Second})
		f.enqueue(t, outbox.Message{Peer: "b", Type: "p2p:task_request", Payload: map[string]string{}})
		testutil.Eventually(t, 10*time.Second, "a dead letter", func() bool { return f.q.Count(outbox.Dead) == 1 })
		if e := f.entry(t, outbox.Query{State: "dead", Peer: "b"}); e.LastError != "b is not a paired peer" || e.Attempts != 1 {
			t.Errorf("dead letter %+v, want given up at once as not paired", e)
		}
	})
}

// TestQueueAdministration: the errors of List, Retry, RetryDeadLetters
// and Drop carry the codes a client sees.
func TestQueueAdministration(t *testing.T) {
	f := startQueue(t, outbox.Options{Transport: &transporttest.Scripted{}, MaxRetries: 5, RetryBase: time.Second})
	ctx := context.Background()
	code := func(err error) wire.ErrorCode {
		var we *wire.Error
		if errors.As(err, &we) {
			return we.Code
		}
		return ""
	}
	const missing = "0190aaaa-0000-7000-8000-000000000000"
	_, _, err := f.q.List(outbox.Query{State: "lost"})
	if c := code(err); c != wire.CodeInvalidParams {
		t.Errorf("List(state lost): %v, want %s", err, wire.CodeInvalidParams)
	}
	_, _, err = f.q.List(outbox.Query{Peer: "b", URL: "http://x"})
	if c := code(err); c != wire.CodeInvalidParams {
		t.Errorf("List(peer and url): %v, want %s", err, wire.CodeInvalidParams)
	}
	_, _, err = f.q.List(outbox.Query{After: "nope"})
	if c := code(err); c != wire.CodeInvalidParams {
		t.Errorf("List(after nope): %v, want %s", err, wire.CodeInvalidParams)
	}
	_, err = f.q.Retry(ctx, missing)
	if c := code(err); c != wire.CodeNotFound {
		t.Errorf("Retry(missing): %v, want %s", err, wire.CodeNotFound)
	}
	_, err = f.q.RetryDeadLetters(ctx, "", "")
	if c := code(err); c != wire.CodeInvalidParams {
		t.Errorf("RetryDeadLetters(none): %v, want %s", err, wire.CodeInvalidParams)
	}
	if err := f.q.Drop(ctx, missing); code(err) != wire.CodeNotFound {
		t.Errorf("Drop(missing): %v, want %s", err, wire.CodeNotFound)
	}
	_, err = f.q.Enqueue(nil, outbox.Message{URL: "http://x"})
	if err == nil || err.Error() != "outbox: message without a type" {
		t.Errorf("Enqueue without a type: %v", err)
	}
}

// stalled is a transport whose destinations under /slow accept and never
// answer (until released or the send's context ends).
type stalled struct {
	release chan struct{}
	mu      sync.Mutex
	waiting int
	fast    int
}

func (s *stalled) Send(ctx context.Context, m *transport.Message) transport.Outcome {
	if !strings.Contains(m.To, "/slow") {
		s.mu.Lock()
		s.fast++
		s.mu.Unlock()
		return transport.Outcome{Class: transport.Delivered, Status: 200}
	}
	s.mu.Lock()
	s.waiting++
	s.mu.Unlock()
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return transport.Outcome{Class: transport.Delivered, Status: 200}
}

func (s *stalled) counts() (waiting, fast int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting, s.fast
}

// TestQueueSlowDestinations: destinations that never answer hold the
// delivery slots for a second of the queue's clock each, not for the
// delivery timeout: the next destination goes once that second passed.
func TestQueueSlowDestinations(t *testing.T) {
	tr := &stalled{release: make(chan struct{})}
	f := startQueue(t, outbox.Options{Transport: tr, MaxRetries: 5, RetryBase: time.Second})
	t.Cleanup(func() { close(tr.release) }) // before the queue drains
	const slots = 16
	for i := range slots {
		f.enqueue(t, hook(fmt.Sprintf("http://192.0.2.10/slow/%d", i)))
	}
	testutil.Eventually(t, 10*time.Second, "every slot held by a destination that does not answer", func() bool {
		w, _ := tr.counts()
		return w == slots
	})
	f.enqueue(t, hook("http://192.0.2.10/fast"))
	if _, fast := tr.counts(); fast != 0 {
		t.Fatalf("the next destination was sent to while every slot was held")
	}
	f.advanceUntil(t, time.Second, "the next destination sent to once the slow ones held their slots a second", func() bool {
		_, fast := tr.counts()
		return fast == 1
	})
}
