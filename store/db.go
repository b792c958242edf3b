package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this code writes. Version 2 may
// keep the events of one write in one record (a JSON array, Tx.Events);
// version 3 keeps the tier-1 batch ids in groups (t1_seen_g, tier1.go);
// version 4 keeps the events a task is created with in the task's record
// (record.go); version 5 writes the retention index entries of tasks
// created final in later commits (finished.go); version 6 adds later
// writes' events to those kept in the task's record while they fit.
// Older files are read as they are.
const SchemaVersion = 6

// FileName is the name of the data file inside a data directory.
const FileName = "synapse.db"

var (
	bucketMeta      = []byte("meta")
	bucketTasks     = []byte("tasks")
	bucketEvents    = []byte("events")
	bucketFinished  = []byte("finished")
	bucketIdem      = []byte("idem")
	bucketIdemExp   = []byte("idem_exp")
	bucketTokens    = []byte("tokens")
	bucketTokenHash = []byte("token_hash")

	allBuckets = [][]byte{bucketMeta, bucketTasks, bucketEvents, bucketFinished,
		bucketIdem, bucketIdemExp, bucketTokens, bucketTokenHash}

	keySchema = []byte("schema_version")
)

// Options tune Open.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file. Default 3 s.
	LockTimeout time.Duration
	// MaxBatch caps the number of writes grouped into one transaction.
	// Default 1024.
	MaxBatch int
	// QueueSize is how many writes may wait for the writer before callers
	// block (back-pressure). Default 4096.
	QueueSize int
	// Logger gets the store's few log lines; nil discards them.
	Logger *slog.Logger
	// Fault, when set, is called before each commit; an error it returns
	// fails that commit as a failing disk would (the transaction is rolled
	// back). It is for fault-injection tests (see Health).
	Fault func() error
	// SyncFault, when set, is called after each commit reached the file;
	// an error it returns is reported as that commit's fdatasync failing
	// (the writes are in the file, the caller hears ErrOutcomeUnknown):
	// the phantom write of a disk that fails now and then. For tests.
	SyncFault func() error
}

func (o *Options) defaults() {
	if o.LockTimeout <= 0 {
		o.LockTimeout = 3 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 1024
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 4096
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// DB is an open data file.
type DB struct {
	// bolt is the open file; the writer swaps it when it reopens the
	// file after a commit of unknown outcome (reopen).
	bolt atomic.Pointer[bolt.DB]
	path string
	log  *slog.Logger
	opts Options

	writes    chan *writeReq
	closing   chan struct{}
	writerEnd chan struct{}
	closeOnce sync.Once
	closeErr  error
	// sendMu orders queueing against Close: writers hold it shared while they
	// queue, Close takes it exclusively to set closed, so no write is queued
	// after the writer's final drain (it would never be answered).
	sendMu sync.RWMutex
	closed bool

	lz    lazyState // lazy.go
	stats Stats
	// fin are the retention index entries waiting for a commit; only the
	// writer touches them (finished.go).
	fin finPending
	// failing is the error of the last commit while commits fail; nil
	// after a commit succeeds.
	failing atomic.Pointer[error]
	// stale is set by a commit of unknown outcome: the writer reopens
	// the file before its next commit. Only the writer touches it.
	stale bool
	// probing is set while the health probe runs (probe).
	probing atomic.Bool
	probes  sync.WaitGroup
}

// Health reports whether the store can commit: ErrClosed once Close has
// begun, the error of the last commit when it failed (until one
// succeeds), else nil. It reads two flags and never writes.
func (db *DB) Health() error {
	db.sendMu.RLock()
	closed := db.closed
	db.sendMu.RUnlock()
	if closed {
		return ErrClosed
	}
	if e := db.failing.Load(); e != nil {
		return *e
	}
	return nil
}

// WaitHealthy waits until Health is nil (true) or ctx ends or the store
// closes (false), looking every probeMin.
func (db *DB) WaitHealthy(ctx context.Context) bool {
	t := time.NewTicker(probeMin)
	defer t.Stop()
	for {
		switch err := db.Health(); {
		case err == nil:
			return true
		case errors.Is(err, ErrClosed):
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// Stats are counters of the writer, for /metrics.
type Stats struct {
	Commits       atomic.Uint64
	Writes        atomic.Uint64
	CommitNanos   atomic.Uint64
	FailedCommits atomic.Uint64
	// Pages counts the pages committed transactions wrote (meta pages
	// included): what a commit costs beyond its two fsyncs.
	Pages atomic.Uint64
}

type writeReq struct {
	fn   func(*Tx) error
	done chan error  // for Update
	cb   func(error) // for UpdateAsync
}

var reqPool = sync.Pool{New: func() any { return &writeReq{done: make(chan error, 1)} }}

// Open opens (creating if needed) the data file at path.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	opts.defaults()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	bdb, err := openBolt(path, opts.LockTimeout)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := &DB{
		path: path, log: opts.Logger, opts: opts,
		writes:    make(chan *writeReq, opts.QueueSize),
		closing:   make(chan struct{}),
		lz:        lazyState{released: make(chan struct{}, 1)},
		writerEnd: make(chan struct{}),
	}
	db.bolt.Store(bdb)
	if err := bdb.Update(initSchema); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go db.writer()
	return db, nil
}

func openBolt(path string, lock time.Duration) (*bolt.DB, error) {
	return bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        lock,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		// Nothing reads bolt's DB.Stats; without them no transaction
		// takes the statistics lock.
		NoStatistics: true,
	})
}

// reopen closes and opens the file again after a commit of unknown
// outcome: bbolt's pages in memory (its freelist, its meta) may then
// disagree with the file, and the file is the truth. Only the writer
// calls it.
func (db *DB) reopen() error {
	if old := db.bolt.Load(); old != nil {
		db.bolt.Store(nil)
		if err := old.Close(); err != nil {
			db.log.Warn("close before reopen", "err", err)
		}
	}
	bdb, err := openBolt(db.path, db.opts.LockTimeout)
	if err != nil {
		return fmt.Errorf("reopen store: %w", hideDir(err, db.path))
	}
	db.bolt.Store(bdb)
	db.stale = false
	db.log.Info("store reopened after a commit of unknown outcome")
	return nil
}

func initSchema(tx *bolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	if v := meta.Get(keySchema); v != nil {
		if len(v) != 4 {
			return fmt.Errorf("corrupt schema_version record")
		}
		if got := binary.BigEndian.Uint32(v); got > SchemaVersion {
			return fmt.Errorf("%w: file has %d, this binary knows %d", ErrSchemaTooNew, got, SchemaVersion)
		}
	}
	if err := recoverFinished(&Tx{tx: tx}); err != nil {
		return fmt.Errorf("retention index: %w", err)
	}
	return meta.Put(keySchema, binary.BigEndian.AppendUint32(nil, SchemaVersion))
}

// Path is the file's path.
func (db *DB) Path() string { return db.path }

// Stats returns the writer's counters.
func (db *DB) Stats() *Stats { return &db.stats }

// Close stops the writer after the queued writes are committed and closes the
// file. It is safe to call more than once; ctx bounds the wait for the writer.
func (db *DB) Close(ctx context.Context) error {
	db.closeOnce.Do(func() {
		db.sendMu.Lock()
		db.closed = true
		close(db.closing)
		db.sendMu.Unlock()
		select {
		case <-db.writerEnd:
		case <-ctx.Done():
			db.closeErr = fmt.Errorf("close store: writer did not stop: %w", ctx.Err())
			return
		}
		db.probes.Wait()
		if b := db.bolt.Load(); b != nil {
			if err := b.Close(); err != nil {
				db.closeErr = fmt.Errorf("close store: %w", err)
			}
		}
	})
	return db.closeErr
}

// Update runs fn in a write transaction shared with other waiting writes and
// returns after the transaction is committed and fsynced. fn may be run more
// than once (when another write in its group fails), so it must only read and
// write through tx. An error from fn discards fn's writes alone.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	req := reqPool.Get().(*writeReq)
	req.fn = fn
	if err := db.enqueue(ctx, req); err != nil {
		req.fn = nil
		reqPool.Put(req)
		return err
	}
	// Once queued the write will happen; wait for its outcome regardless of
	// ctx so that a caller never reports failure for a committed write.
	err := <-req.done
	req.fn = nil
	reqPool.Put(req)
	return err
}

// UpdateQueued is Update that calls queued (when not nil) as soon as fn
// has its place in the writer's queue, before the commit: writes queued
// later are applied after fn, which lets a caller that must order its
// writes release the next one without waiting for an fsync.
func (db *DB) UpdateQueued(ctx context.Context, fn func(*Tx) error, queued func()) error {
	req := reqPool.Get().(*writeReq)
	req.fn = fn
	if err := db.enqueue(ctx, req); err != nil {
		req.fn = nil
		reqPool.Put(req)
		return err
	}
	if queued != nil {
		queued()
	}
	err := <-req.done
	req.fn = nil
	reqPool.Put(req)
	return err
}

// UpdateAsync queues fn like Update and calls cb (from the writer goroutine,
// so it must not block) with the outcome. It blocks only while the queue is
// full.
func (db *DB) UpdateAsync(fn func(*Tx) error, cb func(error)) {
	if err := db.enqueue(context.Background(), &writeReq{fn: fn, cb: cb}); err != nil && cb != nil {
		cb(err)
	}
}

// enqueue hands req to the writer, or fails with ErrClosed once Close has
// begun, or with ctx's error while the queue is full.
func (db *DB) enqueue(ctx context.Context, req *writeReq) error {
	db.sendMu.RLock()
	defer db.sendMu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	select {
	case db.writes <- req:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// View runs fn in a read-only transaction.
func (db *DB) View(fn func(*Tx) error) error {
	for range 16 {
		b := db.bolt.Load()
		if b == nil {
			return fmt.Errorf("read: %w", ErrOutcomeUnknown)
		}
		err := b.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) })
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) && db.bolt.Load() != b {
			continue // reopened meanwhile; fn did not run
		}
		return err
	}
	return fmt.Errorf("read: %w", bolterrors.ErrDatabaseNotOpen)
}

func (db *DB) writer() {
	defer close(db.writerEnd)
	batch := make([]*writeReq, 0, db.opts.MaxBatch)
	last := 0 // writes in the last transaction
	for {
		var first *writeReq
		select {
		case first = <-db.writes:
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

// commit runs the batch in one transaction. When one function fails, the
// transaction is rolled back, that function gets its error and the others
// are run again without it.
func (db *DB) commit(batch []*writeReq) {
	if db.stale || db.bolt.Load() == nil {
		if err := db.reopen(); err != nil {
			db.failed(err)
			db.finish(batch, err)
			return
		}
	}
	for len(batch) > 0 {
		start := time.Now()
		btx, err := db.bolt.Load().Begin(true)
		if err != nil {
			err = fmt.Errorf("begin write: %w", err)
			db.failed(err)
			db.finish(batch, err)
			return
		}
		failed, ferr := -1, error(nil)
		tx := &Tx{tx: btx, db: db}
		for i, r := range batch {
			if ferr = runFn(r.fn, tx); ferr != nil {
				failed = i
				break
			}
		}
		if failed < 0 && db.finishedDue(tx) {
			if err := tx.flushFinished(); err != nil {
				_ = btx.Rollback()
				db.finish(batch, fmt.Errorf("retention index: %w", err))
				return
			}
		}
		if failed >= 0 {
			_ = btx.Rollback()
			db.finish(batch[failed:failed+1], ferr)
			batch = append(batch[:failed], batch[failed+1:]...)
			continue
		}
		if db.opts.Fault != nil {
			err = db.opts.Fault()
		}
		if err != nil {
			_ = btx.Rollback()
		} else {
			err = btx.Commit()
			if err == nil && db.opts.SyncFault != nil {
				err = db.opts.SyncFault()
			}
		}
		if err != nil {
			db.stats.FailedCommits.Add(1)
			db.log.Error("commit failed", "err", err, "writes", len(batch))
			if diskFull(err) {
				// The data pages' write or the file's growth failed:
				// bbolt wrote no meta page, so nothing is stored.
				err = fmt.Errorf("commit: %w", hideDir(err, db.path))
			} else {
				err = fmt.Errorf("commit: %w: %w", ErrOutcomeUnknown, hideDir(err, db.path))
				db.stale = true
			}
			db.failed(err)
		} else {
			if db.failing.Load() != nil {
				db.failing.Store(nil)
			}
			db.finishedCommitted(tx)
			db.stats.Commits.Add(1)
			db.stats.Writes.Add(uint64(len(batch)))
			db.stats.CommitNanos.Add(uint64(time.Since(start)))
			ts := btx.Stats()
			db.stats.Pages.Add(uint64(ts.GetWrite()))
		}
		db.finish(batch, err)
		return
	}
}

// diskFull tells whether err is a full disk or file-size limit, or the
// file's growth failing (bbolt wraps that error as text: "file resize
// error"), which comes before any page of the commit is written.
func diskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EFBIG) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	return strings.HasPrefix(err.Error(), "file resize error")
}

// failed records err as the store's health and starts the probe.
func (db *DB) failed(err error) {
	db.failing.Store(&err)
	if db.probing.CompareAndSwap(false, true) {
		db.probes.Add(1)
		go db.probe()
	}
}

// Probe back-off: Health turns nil within probeMax of the disk healing.
const (
	probeMin = 50 * time.Millisecond
	probeMax = time.Second
)

var keyProbe = []byte("health_probe")

// probe commits a tiny write, backing off from probeMin to probeMax,
// until one succeeds (which clears the failing health) or Close begins:
// the health follows the store even when no client writes.
func (db *DB) probe() {
	defer db.probes.Done()
	defer db.probing.Store(false)
	wait := probeMin
	for {
		t := time.NewTimer(wait)
		select {
		case <-db.closing:
			t.Stop()
			return
		case <-t.C:
		}
		if db.failing.Load() == nil {
			return
		}
		err := db.Update(context.Background(), func(tx *Tx) error {
			return tx.b(bucketMeta).Put(keyProbe, binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano())))
		})
		if err == nil || errors.Is(err, ErrClosed) {
			return
		}
		wait = min(wait*2, probeMax)
	}
}

func runFn(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store write panicked: %v", p)
		}
	}()
	return fn(tx)
}

func (db *DB) finish(reqs []*writeReq, err error) {
	for _, r := range reqs {
		if r.cb != nil {
			r.cb(err)
			continue
		}
		if r.done != nil {
			r.done <- err
		}
	}
}

// dirHidden is an error whose text names the data file without its
// directory: it reaches clients (a full disk is a retriable 500), and
// where the agent keeps its data is none of theirs. The log keeps the
// full text.
type dirHidden struct {
	err  error
	text string
}

func (e *dirHidden) Error() string { return e.text }
func (e *dirHidden) Unwrap() error { return e.err }

func hideDir(err error, path string) error {
	text := err.Error()
	if !strings.Contains(text, path) {
		return err
	}
	return &dirHidden{err: err, text: strings.ReplaceAll(text, path, filepath.Base(path))}
}
