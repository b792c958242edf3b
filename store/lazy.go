package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Two ways to spend fewer commits on what nobody waits for.
//
// UpdateLazy queues a write that does not start a commit of its own: it
// joins the next transaction the writer commits for other writes, or, when
// none comes within lazyMax, one of its own. It is for records whose loss
// in a crash is harmless (a peer message's seen mark, the deletion of a
// delivered outbox message: a redelivery is answered as a duplicate, or
// its effect is idempotent): they no longer cost an fsync each, nor delay
// the writes someone does wait for by occupying the writer.
//
// Hold keeps the writer, once it has a write, from committing until
// released, for at most holdMax: a caller about to queue several writes
// that belong together (the envelopes of one batch from a peer) gets them
// into one transaction.

const lazyMax = 20 * time.Millisecond

var holdMax = 2 * time.Millisecond // a variable for TestHold

// lazyState is the DB's lazy writes and holds.
type lazyState struct {
	mu    sync.Mutex
	reqs  []*writeReq
	timer *time.Timer // wakes the writer for reqs after lazyMax
	armed bool        // timer is running
	holds atomic.Int32
	// gen counts Hold calls; seen is gen at the writer's last look.
	gen  atomic.Uint64
	seen uint64
	// released gets a value when the last hold ends.
	released chan struct{}
}

// kick wakes the writer for the lazy writes; it is never run.
var kick = &writeReq{}

// UpdateLazy queues fn to join the next commit, or one of its own after
// lazyMax at the latest, and calls cb (when not nil; from the writer
// goroutine, so it must not block) with the outcome. fn may be run more
// than once, as Update's.
func (db *DB) UpdateLazy(fn func(*Tx) error, cb func(error)) {
	db.sendMu.RLock()
	closed := db.closed
	if !closed {
		db.lz.mu.Lock()
		db.lz.reqs = append(db.lz.reqs, &writeReq{fn: fn, cb: cb})
		switch {
		case db.lz.timer == nil:
			db.lz.timer = time.AfterFunc(lazyMax, func() { _ = db.enqueue(context.Background(), kick) })
		case !db.lz.armed:
			db.lz.timer.Reset(lazyMax)
		}
		db.lz.armed = true
		db.lz.mu.Unlock()
	}
	db.sendMu.RUnlock()
	if closed && cb != nil {
		cb(ErrClosed)
	}
}

// Hold keeps the writer from committing until release is called (once is
// enough; more calls do nothing), for at most holdMax after the writer
// got a write: writes queued meanwhile share its commit.
func (db *DB) Hold() (release func()) {
	db.lz.holds.Add(1)
	db.lz.gen.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			if db.lz.holds.Add(-1) == 0 {
				select {
				case db.lz.released <- struct{}{}:
				default:
				}
			}
		})
	}
}

// held waits while writes are held (Hold) for their release or holdMax,
// and returns batch with the writes queued meanwhile; held tells whether
// a hold began since the last call. Such a transaction counts as one
// write for linger: its writes came together, not from writers that a
// commit releases at once.
func (db *DB) held(batch []*writeReq) (_ []*writeReq, held bool) {
	gen := db.lz.gen.Load()
	held, db.lz.seen = gen != db.lz.seen, gen
	if db.lz.holds.Load() == 0 {
		return batch, held
	}
	t := time.NewTimer(holdMax)
	defer t.Stop()
	for db.lz.holds.Load() > 0 && len(batch) < db.opts.MaxBatch {
		select {
		case r := <-db.writes:
			batch = append(batch, r)
		case <-db.lz.released:
		case <-t.C:
			return batch, held
		case <-db.closing:
			return batch, held
		}
	}
	for len(batch) < db.opts.MaxBatch { // queued just before the release
		select {
		case r := <-db.writes:
			batch = append(batch, r)
		default:
			return batch, held
		}
	}
	return batch, held
}

// withLazy returns the lazy writes queued so far followed by batch without
// kicks (a lazy write's callback comes before those of the writes it
// joined), and how many writes it holds besides the lazy ones.
func (db *DB) withLazy(batch []*writeReq) (_ []*writeReq, writes int) {
	db.lz.mu.Lock()
	b := db.lz.reqs
	if len(b) > 0 {
		db.lz.reqs, db.lz.armed = nil, false
		db.lz.timer.Stop() // a kick that fires anyway may find nothing to do
	} else {
		b = batch[:0]
	}
	db.lz.mu.Unlock()
	lazy := len(b)
	for _, r := range batch {
		if r != kick {
			b = append(b, r)
		}
	}
	return b, len(b) - lazy
}
