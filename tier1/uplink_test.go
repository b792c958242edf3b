package tier1_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/transport"
)

// fakeUpstream is an upstream as a transport: it answers each batch with
// the next outcome of its script (Delivered once the script is done) and
// records what it was sent.
type fakeUpstream struct {
	mu     sync.Mutex
	script []transport.Outcome
	sent   []transport.Message
}

func (f *fakeUpstream) Send(_ context.Context, m *transport.Message) transport.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, *m)
	if len(f.script) == 0 {
		return transport.Outcome{Class: transport.Delivered}
	}
	o := f.script[0]
	f.script = f.script[1:]
	return o
}

func (f *fakeUpstream) messages() []transport.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]transport.Message(nil), f.sent...)
}

// TestUplinkOutcomes: a batch is acknowledged only when delivered, sent
// again after a Retry (waiting at least the upstream's Retry-After), and
// dropped when refused for good; the order holds throughout.
func TestUplinkOutcomes(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	in, db := openIngestor(t, now)
	for i := range 4 {
		if _, err := in.Ingest(context.Background(), "s", "", batchAt("", "d", uint64(i*10), now, 2)); err != nil {
			t.Fatal(err)
		}
	}
	var queued [][]byte
	_ = db.View(func(tx *store.Tx) error { _, queued = tx.T1Outbox(10); return nil })
	if len(queued) != 4 {
		t.Fatalf("%d batches queued, want 4", len(queued))
	}

	up := &fakeUpstream{script: []transport.Outcome{
		{Class: transport.Retry, Unreached: true, RetryAfter: time.Hour}, // batch 0: upstream down
		{Class: transport.Delivered},                                     // batch 0 again
		{Class: transport.Permanent},                                     // batch 1: refused for good
		{Class: transport.Negotiable},                                    // batch 2: a routine it lacks
		{Class: transport.Retry},                                         // batch 3
	}}
	u := tier1.NewUplink(in, db, up, "mqtt://broker/up", "tok", "edge-1", slog.New(slog.DiscardHandler))
	var mu sync.Mutex
	var waits []time.Duration
	u.Wait = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); u.Run(ctx) }()
	testutil.Eventually(t, 10*time.Second, "every batch acknowledged or dropped", func() bool {
		return u.Pending() == 0 && len(up.messages()) >= 6
	})
	cancel()
	<-done

	sent := up.messages()
	order := []int{0, 0, 1, 2, 3, 3}
	if len(sent) != len(order) {
		t.Fatalf("%d sends, want %d", len(sent), len(order))
	}
	for i, m := range sent {
		if !bytes.Equal(m.Body, queued[order[i]]) {
			t.Errorf("send %d is not batch %d", i, order[i])
		}
		if m.Kind != transport.Batch || m.To != "mqtt://broker/up" || m.Header[transport.HeaderRoutine] != "synapse.telemetry" ||
			m.Header[transport.HeaderSourceAgent] != "edge-1" || m.Header[transport.HeaderAuthorization] != "Bearer tok" {
			t.Errorf("send %d: kind %v to %q header %v", i, m.Kind, m.To, m.Header)
		}
	}
	if s, d, f := u.Sent.Load(), u.Dropped.Load(), u.Failures.Load(); s != 2 || d != 2 || f != 2 {
		t.Errorf("sent %d dropped %d failures %d, want 2 2 2", s, d, f)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 2 || waits[0] != time.Hour || waits[1] > u.MaxBackoff {
		t.Errorf("waits %v, want [1h (the Retry-After), a back-off]", waits)
	}
}

// fakeWindow is an upstream that takes several batches at once (a
// tier1.ManySender): it answers each message with the next outcome of its
// script (Delivered once the script is done) and records each window.
type fakeWindow struct {
	fakeUpstream
	windows [][]transport.Message
}

func (f *fakeWindow) SendMany(ctx context.Context, ms []*transport.Message) []transport.Outcome {
	outs := make([]transport.Outcome, len(ms))
	var w []transport.Message
	for i, m := range ms {
		outs[i] = f.Send(ctx, m)
		w = append(w, *m)
	}
	f.mu.Lock()
	f.windows = append(f.windows, w)
	f.mu.Unlock()
	return outs
}

// TestUplinkWindow: to a ManySender up to Window batches go out together,
// in order; those before a failure leave the queue in one transaction
// (refused ones dropped), the failed one and those after it go again;
// nothing is lost and the order of first sends holds.
func TestUplinkWindow(t *testing.T) {
	now := time.Unix(1_790_000_000, 0)
	in, db := openIngestor(t, now)
	const n = 10
	for i := range n {
		if _, err := in.Ingest(context.Background(), "s", "", batchAt("", "d", uint64(i*10), now, 2)); err != nil {
			t.Fatal(err)
		}
	}
	var queued [][]byte
	_ = db.View(func(tx *store.Tx) error { _, queued = tx.T1Outbox(n); return nil })

	d, r := transport.Outcome{Class: transport.Delivered}, transport.Outcome{Class: transport.Retry, Unreached: true}
	up := &fakeWindow{fakeUpstream: fakeUpstream{script: []transport.Outcome{
		d, d, {Class: transport.Permanent}, r, d, // window 1, batches 0-4: 2 refused, 3 fails (4 goes again)
		d, d, d, d, r, // window 2, batches 3-7: 7 fails
	}}}
	u := tier1.NewUplink(in, db, up, "mqtt://", "", "edge-1", slog.New(slog.DiscardHandler))
	u.Window = 5
	u.Wait = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	commits0 := db.Stats().Commits.Load()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); u.Run(ctx) }()
	testutil.Eventually(t, 10*time.Second, "every batch acknowledged or dropped", func() bool { return u.Pending() == 0 })
	cancel()
	<-done

	up.mu.Lock()
	defer up.mu.Unlock()
	want := [][]int{{0, 1, 2, 3, 4}, {3, 4, 5, 6, 7}, {7, 8, 9}}
	if len(up.windows) != len(want) {
		t.Fatalf("%d windows, want %d", len(up.windows), len(want))
	}
	for i, w := range up.windows {
		if len(w) != len(want[i]) {
			t.Fatalf("window %d has %d batches, want %v", i, len(w), want[i])
		}
		for j, m := range w {
			if !bytes.Equal(m.Body, queued[want[i][j]]) {
				t.Errorf("window %d, place %d is not batch %d", i, j, want[i][j])
			}
		}
	}
	if s, dr, f := u.Sent.Load(), u.Dropped.Load(), u.Failures.Load(); s != n-1 || dr != 1 || f != 2 {
		t.Errorf("sent %d dropped %d failures %d, want %d 1 2", s, dr, f, n-1)
	}
	// One transaction per window, not one per batch.
	if c := db.Stats().Commits.Load() - commits0; c != 3 {
		t.Errorf("%d commits for %d batches, want 3 (one per window)", c, n)
	}
}
