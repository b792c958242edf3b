package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// fixture is a started queue over a store of its own.
type fixture struct {
	q     *outbox.Queue
	db    *store.DB
	clock *clocktest.Clock
	m     outbox.Metrics
}

// startQueue builds and starts a queue with opts (DB, Clock, Go and
// Metrics filled in); it is drained and closed when the test ends.
func startQueue(t *testing.T, opts outbox.Options) *fixture {
	t.Helper()
	f := &fixture{db: openDB(t, tempPath(t), store.Options{}), clock: clocktest.New(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))}
	r := metrics.New()
	f.m = outbox.Metrics{Queued: r.Counter("queued", ""), Delivered: r.Counter("delivered", ""), Retries: r.Counter("retries", ""),
		Dead: r.Counter("dead", ""), FullWindows: r.Counter("full_windows", "")}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	opts.DB, opts.Clock, opts.Metrics = f.db, f.clock, f.m
	opts.Go = func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	f.q = outbox.New(ctx, opts)
	f.q.Start()
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		f.q.Drain(dctx)
		f.q.Close()
		f.q.Close() // safe twice
		cancel()
		wg.Wait()
	})
	return f
}

// advanceUntil advances the clock by d until cond holds: a lane arms
// its timer just after it records a failure, so one step may come too
// early.
func (f *fixture) advanceUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, func() bool {
		f.clock.Advance(d)
		return cond()
	})
}

// enqueue queues m in a transaction of its own and returns its id.
func (f *fixture) enqueue(t *testing.T, m outbox.Message) string {
	t.Helper()
	var id string
	update(t, f.db, func(tx *store.Tx) error {
		var err error
		id, err = f.q.Enqueue(tx, m)
		return err
	})
	return id
}

// entry is the first listed item of url in state, nil when none.
func (f *fixture) entry(t *testing.T, q outbox.Query) *outbox.Entry {
	t.Helper()
	items, _, err := f.q.List(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) == 0 {
		return nil
	}
	return &items[0]
}

// hook is a webhook message to url.
func hook(url string) outbox.Message {
	return outbox.Message{URL: url, Type: wire.MessageType("callback"), Payload: map[string]string{"task_id": "t1", "status": "completed"}}
}
