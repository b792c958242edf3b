package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store/commitlog"
	"github.com/synapse-edge/synapse/store/kv"
)

// writer is the one goroutine that writes: group commits into the log,
// checkpoints into the file.
func (db *DB) writer() {
	defer close(db.writerEnd)
	defer db.closeWriteBase()
	tick := time.NewTicker(db.opts.CheckpointInterval)
	defer tick.Stop()
	batch := make([]*writeReq, 0, db.opts.MaxBatch)
	last := 0 // writes in the last transaction
	for {
		var first *writeReq
		select {
		case first = <-db.writes:
		case <-tick.C:
			if db.checkpointDue() {
				_ = db.checkpoint(false)
			}
			continue
		case <-db.closing:
			// Commit what is still queued, then stop.
			for {
				select {
				case r := <-db.writes:
					b, _ := db.withLazy(append(batch[:0], r))
					db.commit(b)
				default:
					b, _ := db.withLazy(batch[:0])
					if len(db.fin.keys) > 0 {
						b = append(b, &writeReq{fn: (*Tx).flushFinished})
					}
					db.commit(b)
					if err := db.checkpoint(true); err != nil {
						db.log.Warn("no checkpoint at close: the commit log keeps the writes", "err", err)
					}
					return
				}
			}
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < db.opts.MaxBatch {
			select {
			case r := <-db.writes:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		var held bool
		batch, held = db.held(db.linger(batch, last)) // lazy.go
		if batch, last = db.withLazy(batch); held {
			last = 1
		}
		db.commit(batch)
	}
}

// A checkpoint by the clock costs two fsyncs and the file's dirty pages
// whatever it carries: under a light load (less than lightLogBytes of log
// since the last, at most a sixteenth of CheckpointBytes) it waits until
// that much log is there or lightIntervals intervals have passed, so that
// its cost is shared by more writes (at 25 sync echo tasks a second, 2
// fsyncs and the pages every 10 s instead of every second). A checkpoint
// that failed is retried every interval.
const (
	lightLogBytes  = 64 << 10
	lightIntervals = 10
)

// checkpointDue reports whether the clock calls for a checkpoint.
func (db *DB) checkpointDue() bool {
	since := time.Since(db.lastCk)
	if since < db.opts.CheckpointInterval {
		return false
	}
	light := min(lightLogBytes, uint64(db.opts.CheckpointBytes)/16)
	return db.boltStale || db.stats.LogBytes.Load()-db.logAtCk >= light || since >= lightIntervals*db.opts.CheckpointInterval
}

// lingerMax bounds how long the writer waits for more writes to join a
// transaction.
const lingerMax = 300 * time.Microsecond

// linger waits a little for more writes when the last transaction showed
// concurrent writers (it held more than one write) and this one holds
// fewer: the writers released by the last commit are on their way back,
// and one fsync for all of them beats one each. A lone writer (last ≤ 1)
// never waits.
func (db *DB) linger(batch []*writeReq, last int) []*writeReq {
	target := last + last/2 + 1 // room to grow towards the number of writers
	if last <= 1 || len(batch) >= target {
		return batch
	}
	t := time.NewTimer(lingerMax)
	defer t.Stop()
	for len(batch) < target && len(batch) < db.opts.MaxBatch {
		select {
		case r := <-db.writes:
			batch = append(batch, r)
		case <-t.C:
			return batch
		case <-db.closing:
			return batch
		}
	}
	return batch
}

// commit runs the batch's functions, each over what the ones before it
// wrote, appends what they wrote to the log as one record with one
// fdatasync and only then lets readers see it and answers the callers.
// A function that fails is answered at once and its writes are
// dropped; the others go on.
func (db *DB) commit(batch []*writeReq) {
	if len(batch) == 0 {
		return
	}
	if db.logStale || db.clog == nil {
		if err := db.reopenLog(); err != nil {
			db.failed(err)
			db.finish(batch, err)
			return
		}
	}
	start := time.Now()
	base, err := db.writeBase()
	if err != nil {
		err = fmt.Errorf("begin write: %w", err)
		db.failed(err)
		db.finish(batch, err)
		return
	}
	// g is the layer as the group's functions so far leave it, ws their
	// write-set, grp what they leave for the group's end (finished.go).
	g := db.cur
	ws := append(db.wsBuf[:0], kv.WriteSetVersion)
	grp := &Tx{db: db}
	ok, ckpt := db.okBuf[:0], false
	for _, r := range batch {
		if r.fn == nil {
			ckpt = ckpt || r.ckpt
			ok = append(ok, r)
			continue
		}
		tx := &Tx{v: kv.NewView(g.Clone(), base, true), db: db, flushedPending: grp.flushedPending}
		tx.v.ReuseOps(db.opsBuf)
		ferr := runFn(r.fn, tx)
		if ops := tx.v.Ops(); cap(ops) <= 1<<20 {
			db.opsBuf = ops[:0]
		}
		if ferr != nil {
			r.answer(ferr)
			continue
		}
		g = tx.v.Layer()
		ws = append(ws, tx.v.Ops()...)
		grp.deferred = append(grp.deferred, tx.deferred[tx.flushedDeferred:]...)
		grp.flushedPending = tx.flushedPending
		grp.onCommit = append(grp.onCommit, tx.onCommit...)
		ok = append(ok, r)
	}
	db.okBuf = ok[:0]
	if len(ok) == 0 {
		return
	}
	if db.finishedDue(grp) {
		// Only then a view of its own over what the group wrote:
		// finishedDue reads grp's queues, not its view.
		grp.v = kv.NewView(g.Clone(), base, true)
		if err := grp.flushFinished(); err != nil {
			db.finish(ok, fmt.Errorf("retention index: %w", err))
			return
		}
		g = grp.v.Layer()
		ws = append(ws, grp.v.Ops()...)
	}
	if cap(ws) <= 1<<20 {
		db.wsBuf = ws[:0]
	}
	// A key the group puts again and again is logged once (kv.Coalescer).
	if c, cerr := db.coal.Coalesce(ws); cerr == nil {
		ws = c
	}
	if err = db.appendGroup(ws); err != nil {
		if db.logStale {
			// What reads see from now on is what the log holds.
			if rerr := db.reopenLog(); rerr != nil {
				db.log.Error("reopen the commit log", "err", rerr)
			}
		}
		db.finish(ok, err)
		return
	}
	if db.failing.Load() != nil {
		db.failing.Store(nil)
	}
	db.cur = g
	pub := db.cur.Clone()
	db.pubMu.Lock()
	db.pub = pub
	db.pubMu.Unlock()
	db.finishedCommitted(grp)
	db.stats.Commits.Add(1)
	db.stats.Writes.Add(uint64(len(ok)))
	db.stats.CommitNanos.Add(uint64(time.Since(start)))
	for _, fn := range grp.onCommit {
		fn()
	}
	var ckErr error
	if ckpt || db.stats.LogBytes.Load()-db.logAtCk >= uint64(db.opts.CheckpointBytes) {
		// A failed checkpoint is retried; the log keeps the writes.
		ckErr = db.checkpoint(ckpt)
	}
	for _, r := range ok {
		if r.ckpt {
			r.answer(ckErr)
		} else {
			r.answer(nil)
		}
	}
}

// answer gives r its outcome.
func (r *writeReq) answer(err error) {
	if r.cb != nil {
		r.cb(err)
	} else if r.done != nil {
		r.done <- err
	}
}

// appendGroup makes the write-set ws (its version byte and its ops) one
// durable log record, or fails with nothing acknowledged: an error that
// says nothing was written (a full disk before the record's bytes went
// out) or ErrOutcomeUnknown. After any failure the log is reopened
// before the next group, and what it holds then is the truth.
func (db *DB) appendGroup(ws []byte) error {
	var err error
	injected := false
	if db.opts.Fault != nil {
		err = db.opts.Fault()
		injected = err != nil
	}
	if err == nil && len(ws) > 1 {
		bytes0, syncs0 := db.clog.Stats().Bytes.Load(), db.clog.Stats().Syncs.Load()
		var seq uint64
		seq, err = db.clog.Append([][]byte{ws})
		if err == nil {
			db.logLast.Store(seq)
		}
		db.stats.LogBytes.Add(db.clog.Stats().Bytes.Load() - bytes0)
		db.stats.LogSyncs.Add(db.clog.Stats().Syncs.Load() - syncs0)
	}
	if err == nil && db.opts.SyncFault != nil {
		err = db.opts.SyncFault()
	}
	if err == nil {
		return nil
	}
	db.stats.FailedCommits.Add(1)
	db.log.Error("commit failed", "err", err)
	switch {
	case injected && diskFull(err):
		// Before the log was touched: nothing is stored.
		err = fmt.Errorf("commit: %w", hideDir(err, db.path))
	case !injected && diskFull(err) && !errors.Is(err, commitlog.ErrSync):
		// The record's write (or its segment's creation) failed: what
		// went out of it is a torn tail that reopening cuts off.
		err = fmt.Errorf("commit: %w", hideDir(err, db.path))
		db.logStale = true
	default:
		err = fmt.Errorf("commit: %w: %w", ErrOutcomeUnknown, hideDir(err, db.path))
		db.logStale = true
		db.unsettled.Store(true)
	}
	db.failed(err)
	return err
}
