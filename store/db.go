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

	"github.com/synapse-edge/synapse/store/commitlog"
	"github.com/synapse-edge/synapse/store/kv"
)

// SchemaVersion is the layout version this code writes. Version 2 may
// keep the events of one write in one record (a JSON array, Tx.Events);
// version 3 keeps the tier-1 batch ids in groups (t1_seen_g, kept by
// package tier1: tier1/seen.go);
// version 4 keeps the events a task is created with in the task's record
// (record.go); version 5 writes the retention index entries of tasks
// created final in later commits (finished.go); version 6 adds later
// writes' events to those kept in the task's record while they fit;
// version 7 commits through the commit log beside the file (LogDir),
// which an older binary would not read: it refuses the file. Older files
// are read as they are (a file of version 6 or before has no log yet).
// Version 8 writes task records in a compact binary layout (record.go,
// package taskrec), which an older binary would not decode: it refuses
// the file. Version 9 may store tier-1 blocks in their second form, with
// integer fields by their steps or differences (tier1/block.go), and
// keeps the tier-1 batch ids in t1_seen_o, keyed so that a counting
// sender's groups are appended (tier1/seen.go; t1_seen_g is read and
// pruned until empty), which an older binary would not read: it refuses
// the file.
const SchemaVersion = 9

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
	// keyLogApplied is the sequence number of the last commit-log record
	// the file holds (uint64 BE), written by every checkpoint.
	keyLogApplied = []byte("log_applied")
)

// LogDir is the directory of the commit log of the data file at path.
func LogDir(path string) string { return path + ".log" }

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
	// CheckpointInterval is how often what the commit log holds is
	// written into the file (a checkpoint). Default 1 s.
	CheckpointInterval time.Duration
	// CheckpointBytes starts a checkpoint once the log has grown by this
	// much since the last. Default 1 MiB: what is not checkpointed is
	// also held in memory (a little more than its log bytes) and
	// replayed at a restart, so on a gateway with little memory 16 MiB
	// would cost that much heap under load, for a saving of a few bbolt
	// commits a second at most (each a small share of the fsyncs of the
	// group commits it follows).
	CheckpointBytes int64
	// Fault, when set, is called before each group commit; an error it
	// returns fails that commit as a failing disk would before anything
	// is written (nothing is stored). It is for fault-injection tests
	// (see Health).
	Fault func() error
	// SyncFault, when set, is called after each group commit reached the
	// log; an error it returns is reported as that commit's fdatasync
	// failing (the writes are in the log, the caller hears
	// ErrOutcomeUnknown): the phantom write of a disk that fails now and
	// then. For tests.
	SyncFault func() error

	// logFS is the commit log's file system (nil: the OS's); the
	// power-loss tests crash it. afterCheckpoint, when set, is called by
	// the writer after each checkpoint's commit, before the log's trim.
	logFS           commitlog.FS
	afterCheckpoint func()
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
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Second
	}
	if o.CheckpointBytes <= 0 {
		o.CheckpointBytes = 1 << 20
	}
}

// DB is an open data file.
type DB struct {
	// bolt is the open file; the writer swaps it when it reopens the
	// file after a checkpoint failed (reopenBolt).
	bolt atomic.Pointer[bolt.DB]
	path string
	log  *slog.Logger
	opts Options

	// The commit path (checkpoint.go). Only the writer touches clog,
	// cur, wbase and the stale flags; applied changes under ckMu held
	// exclusively (a checkpoint), so Check reads it holding ckMu.
	clog *commitlog.Log
	// logLast is the seq of the last record the log holds whole (written
	// and synced): a live Check verifies the log up to it, since the
	// writer may be halfway through the next.
	logLast atomic.Uint64
	applied uint64    // the last log record the file holds
	cur     *kv.Layer // what the log holds over the file
	wbase   *bolt.Tx
	// pubMu pairs a reader's bbolt transaction with pub, the layer
	// published for readers (a clone of cur after each group commit).
	pubMu sync.RWMutex
	pub   *kv.Layer
	// ckMu is held shared by Check and Backup: no checkpoint changes the
	// file meanwhile.
	ckMu sync.RWMutex
	// lastCk and logAtCk are the time and the log's byte count of the
	// last checkpoint.
	lastCk  time.Time
	logAtCk uint64
	// logStale is set by a group commit of unknown outcome: the writer
	// reopens the log and rebuilds cur from it before the next one.
	logStale bool
	// unsettled is set with logStale by a group of unknown outcome and
	// cleared once the log is reopened: until then what readers see may
	// lack a group the log holds after all (Settled).
	unsettled atomic.Bool
	// boltStale is set by a failed checkpoint: the writer reopens the
	// file before the next.
	boltStale bool

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

	// okBuf and wsBuf are the writer's buffers of a group's writes,
	// opsBuf the one each of its transactions appends its ops to.
	okBuf  []*writeReq
	wsBuf  []byte
	opsBuf []byte
	coal   kv.Coalescer

	lz    lazyState // lazy.go
	stats Stats
	// fin are the retention index entries waiting for a commit; only the
	// writer touches them (finished.go).
	fin finPending
	// failing is the error of the last commit while commits fail; nil
	// after a commit succeeds.
	failing atomic.Pointer[error]
	// probing is set while the health probe runs (probe).
	probing atomic.Bool
	probes  sync.WaitGroup
}

// Settled reports whether what readers see is what the log holds: false
// after a group commit of unknown outcome until the store has reopened
// its log (at the next write or health probe, which a disk that still
// fails refuses). A caller deciding whether a write of unknown outcome
// was stored waits for it (the agent's adoption of such writes).
func (db *DB) Settled() bool { return !db.unsettled.Load() }

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
	// Commits counts group commits (each one log append, one fsync),
	// Writes the writes they acknowledged.
	Commits       atomic.Uint64
	Writes        atomic.Uint64
	CommitNanos   atomic.Uint64
	FailedCommits atomic.Uint64
	// Pages counts the pages checkpoints wrote into the file (meta pages
	// included), PageBytes their bytes.
	Pages     atomic.Uint64
	PageBytes atomic.Uint64
	// LogBytes and LogSyncs are what the commit log wrote and synced;
	// LogAtCheckpoint is LogBytes at the last checkpoint.
	LogBytes        atomic.Uint64
	LogSyncs        atomic.Uint64
	LogAtCheckpoint atomic.Uint64
	// Checkpoints counts checkpoints (each one bbolt commit, two
	// fsyncs), CheckpointNanos their time; FailedCheckpoints those that
	// failed (retried later).
	Checkpoints       atomic.Uint64
	CheckpointNanos   atomic.Uint64
	FailedCheckpoints atomic.Uint64
}

// BytesWritten is what the store has written since Open: log records
// and the file's pages.
func (s *Stats) BytesWritten() uint64 { return s.LogBytes.Load() + s.PageBytes.Load() }

// Fsyncs is how many fsyncs the store has asked for since Open: one per
// log append (and per new log segment), two per checkpoint.
func (s *Stats) Fsyncs() uint64 { return s.LogSyncs.Load() + 2*s.Checkpoints.Load() }

type writeReq struct {
	fn   func(*Tx) error
	done chan error  // for Update
	cb   func(error) // for UpdateAsync
	// ckpt asks the writer for a checkpoint (fn is nil).
	ckpt bool
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
	if err := db.recover(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	go db.writer()
	return db, nil
}

// openBolt opens the file with its freelist kept in the file: the open
// reads it instead of every page (NoFreelistSync rebuilt it from all of
// them, so a restart read, and kept resident, the whole file), and only
// checkpoints commit, so writing it costs a page or a few a second. A
// file whose freelist was never written gets it in one commit at its
// first open; on a full disk that commit fails and the file is opened as
// it was written. The file grows allocStep at a time past 4 MiB (bbolt's
// default is 16 MiB).
// A file replaced while the open waited for its lock (db compact renames
// its copy over it) is opened again: the lock was the old file's.
func openBolt(path string, lock time.Duration) (b *bolt.DB, err error) {
	o := &bolt.Options{Timeout: lock, FreelistType: bolt.FreelistMapType, NoStatistics: true}
	for i := 0; ; i++ {
		before, _ := os.Stat(path)
		if b, err = bolt.Open(path, 0o600, o); err != nil && diskFull(err) {
			o.NoFreelistSync = true
			b, err = bolt.Open(path, 0o600, o)
		}
		if err != nil {
			return nil, err
		}
		if now, serr := os.Stat(path); i == 2 || before == nil || serr != nil || os.SameFile(before, now) {
			break
		}
		b.Close()
	}
	b.AllocSize = allocStep
	return b, nil
}

const allocStep = 4 << 20

// reopenBolt closes and opens the file again after a failed checkpoint:
// bbolt's pages in memory (its freelist, its meta) may then disagree
// with the file, and the file is the truth. Only the writer calls it.
func (db *DB) reopenBolt() error {
	db.closeWriteBase()
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
	db.boltStale = false
	db.log.Info("store file reopened after a failed checkpoint")
	return nil
}

// schemaOf reads the schema version of the file (0 when it has none)
// and refuses one newer than this code's.
func schemaOf(btx *bolt.Tx) (int, error) {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	v := meta.Get(keySchema)
	if v == nil {
		return 0, nil
	}
	if len(v) != 4 {
		return 0, fmt.Errorf("corrupt schema_version record")
	}
	if got := binary.BigEndian.Uint32(v); got > SchemaVersion {
		return 0, fmt.Errorf("%w: file has %d, this binary knows %d", ErrSchemaTooNew, got, SchemaVersion)
	}
	return int(binary.BigEndian.Uint32(v)), nil
}

// initSchema creates the buckets, indexes the final tasks a crash left
// out of the retention index and records the schema version; with
// dryRun it only tells whether any of that is needed (so that opening
// a current file writes nothing).
func initSchema(btx *bolt.Tx, dryRun bool) (needed bool, err error) {
	for _, name := range allBuckets {
		if btx.Bucket(name) != nil {
			continue
		}
		if dryRun {
			return true, nil
		}
		if _, err := btx.CreateBucket(name); err != nil {
			return true, err
		}
	}
	v, err := schemaOf(btx)
	if err != nil {
		return false, err
	}
	tx := &Tx{v: kv.NewView(kv.NewLayer(), btx, true)}
	if dryRun {
		return v != SchemaVersion || !finishedRecovered(tx), nil
	}
	if err := recoverFinished(tx); err != nil {
		return true, fmt.Errorf("retention index: %w", err)
	}
	if err := tx.v.Layer().ApplyTo(btx); err != nil {
		return true, fmt.Errorf("retention index: %w", err)
	}
	return true, btx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint32(nil, SchemaVersion))
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
		if db.clog != nil {
			if err := db.clog.Close(); err != nil {
				db.closeErr = fmt.Errorf("close store: %w", err)
			}
		}
		if b := db.bolt.Load(); b != nil {
			if err := b.Close(); err != nil {
				db.closeErr = fmt.Errorf("close store: %w", err)
			}
		}
	})
	return db.closeErr
}

// Update runs fn in a write transaction shared with other waiting writes and
// returns after the transaction is committed and fsynced. fn must only read
// and write through tx. An error from fn discards fn's writes alone.
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

// View runs fn in a read-only transaction: a snapshot of every write
// acknowledged before it began, which later writes do not change.
func (db *DB) View(fn func(*Tx) error) error {
	btx, l, err := db.snapshot()
	if err != nil {
		return err
	}
	defer func() { _ = btx.Rollback() }()
	return fn(&Tx{v: kv.NewView(l, btx, false)})
}

// snapshot begins a bbolt read transaction and takes the published
// layer with it, under pubMu: the writer publishes the layer of a
// checkpoint's writes as empty only after that checkpoint is in the
// file, so the two never miss a write.
func (db *DB) snapshot() (*bolt.Tx, *kv.Layer, error) {
	for range 16 {
		db.pubMu.RLock()
		b := db.bolt.Load()
		if b == nil {
			db.pubMu.RUnlock()
			return nil, nil, fmt.Errorf("read: %w", ErrOutcomeUnknown)
		}
		btx, err := b.Begin(false)
		l := db.pub
		db.pubMu.RUnlock()
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) && db.bolt.Load() != b {
			continue // reopened meanwhile
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read: %w", err)
		}
		return btx, l, nil
	}
	return nil, nil, fmt.Errorf("read: %w", bolterrors.ErrDatabaseNotOpen)
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
		r.answer(err)
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
