package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/store/commitlog"
	"github.com/synapse-edge/synapse/store/kv"
)

// The commit path. A group commit appends its write-set to the commit
// log (LogDir, package commitlog) with one write and one fdatasync and
// keeps it in memory (cur, a layer over the file); the file itself is
// brought up to date by checkpoints: every CheckpointInterval (under a
// light load less often: checkpointDue, writer.go) or CheckpointBytes
// of log, the writer applies cur to bbolt in one
// ordinary synced commit that also records the last log record it
// holds (meta "log_applied"), and then trims the log. bbolt with
// NoSync is not safe on power loss, so a checkpoint never uses it.
//
// At Open the records after log_applied are replayed into the file in
// one commit, and the log is trimmed: a torn tail was acknowledged to
// nobody and is cut (commitlog), damage before it stops Open with a
// *commitlog.CorruptError naming the segment and the offset.

// logApplied reads the last log record the file holds.
func logApplied(btx *bolt.Tx) (uint64, error) {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	v := meta.Get(keyLogApplied)
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("corrupt log_applied record")
}

// recover brings the file up to date with its log and its schema at
// Open; when neither needs it, it writes nothing.
func (db *DB) recover() error {
	b := db.bolt.Load()
	var needInit, current bool
	err := b.View(func(btx *bolt.Tx) error {
		v, err := schemaOf(btx)
		if err != nil {
			return err
		}
		current = v == SchemaVersion
		for _, name := range allBuckets {
			current = current && btx.Bucket(name) != nil
		}
		if db.applied, err = logApplied(btx); err != nil {
			return err
		}
		needInit, err = initSchema(btx, true)
		return err
	})
	if err != nil {
		return err
	}
	clog, cur, err := db.openLog()
	if err != nil {
		return err
	}
	db.clog, db.cur, db.pub = clog, kv.NewLayer(), kv.NewLayer()
	if !cur.Empty() {
		through := clog.Next() - 1
		start := time.Now()
		switch err := db.applyCheckpoint(cur, through); {
		case err != nil && diskFull(err):
			// A full disk: the log's records are served from memory, as
			// between checkpoints, and the writer's checkpoint retries.
			db.log.Warn("commit log replayed into memory only: the disk is full", "records", through-db.applied, "err", hideDir(err, db.path))
			db.boltStale = true
			db.cur, db.pub = cur, cur.Clone()
		case err != nil:
			return fmt.Errorf("replay the commit log: %w", err)
		default:
			db.log.Info("commit log replayed", "records", through-db.applied, "items", cur.Items(), "took", time.Since(start))
			db.applied = through
			if err := clog.Trim(through); err != nil {
				db.log.Warn("trim the commit log", "err", err)
			}
		}
	}
	if needInit {
		err := b.Update(func(btx *bolt.Tx) error { _, err := initSchema(btx, false); return err })
		switch {
		case err != nil && current && diskFull(err):
			// Only the retention index's recovery wanted the write: on a
			// full disk the agent starts all the same (reads, export),
			// and the next start with room indexes those tasks.
			db.log.Warn("opened on a full disk: the retention index is brought up to date at the next start", "err", hideDir(err, db.path))
		case err != nil:
			return err
		}
	}
	db.lastCk = time.Now()
	return nil
}

// openLog opens the log and reads what it holds after the checkpoint
// into a new layer.
func (db *DB) openLog() (*commitlog.Log, *kv.Layer, error) {
	clog, err := commitlog.Open(LogDir(db.path), commitlog.Options{
		Checkpoint: db.applied, SegmentSize: min(max(db.opts.CheckpointBytes, 64<<10), 16<<20), FS: db.opts.logFS})
	if err != nil {
		return nil, nil, err
	}
	l := kv.NewLayer()
	err = clog.Replay(db.applied, func(seq uint64, p []byte) error {
		if err := l.Replay(p); err != nil {
			return fmt.Errorf("commit log record %d: %w", seq, err)
		}
		return nil
	})
	if err != nil {
		clog.Close()
		return nil, nil, err
	}
	db.logLast.Store(clog.Next() - 1)
	return clog, l, nil
}

// reopenLog closes the log and opens it again after a group commit of
// unknown outcome, and rebuilds what the writer and the readers see
// from what the log holds: the failed group, wholly or not at all.
func (db *DB) reopenLog() error {
	if db.clog != nil {
		if err := db.clog.Close(); err != nil {
			db.log.Warn("close the commit log before reopening it", "err", err)
		}
		db.clog = nil
	}
	clog, cur, err := db.openLog()
	if err != nil {
		return fmt.Errorf("reopen the commit log: %w", hideDir(err, db.path))
	}
	db.clog, db.cur = clog, cur
	pub := cur.Clone()
	db.pubMu.Lock()
	db.pub = pub
	db.pubMu.Unlock()
	db.logStale = false
	db.unsettled.Store(false)
	db.log.Info("commit log reopened after a commit of unknown outcome")
	return nil
}

// writeBase is the writer's read transaction of the file, which its
// write transactions read below cur.
func (db *DB) writeBase() (*bolt.Tx, error) {
	if db.boltStale || db.bolt.Load() == nil {
		if err := db.reopenBolt(); err != nil {
			return nil, err
		}
	}
	if db.wbase == nil {
		btx, err := db.bolt.Load().Begin(false)
		if err != nil {
			return nil, err
		}
		db.wbase = btx
	}
	return db.wbase, nil
}

func (db *DB) closeWriteBase() {
	if db.wbase != nil {
		_ = db.wbase.Rollback()
		db.wbase = nil
	}
}

// checkpoint writes cur into the file. Unless forced, it gives way to a
// running Check (it is retried later); a failed one keeps cur and the
// log and is retried too.
func (db *DB) checkpoint(force bool) error {
	if db.logStale {
		if err := db.reopenLog(); err != nil {
			return err
		}
	}
	if db.cur.Empty() {
		db.lastCk = time.Now()
		return nil
	}
	if force {
		db.ckMu.Lock()
	} else if !db.ckMu.TryLock() {
		return nil
	}
	defer db.ckMu.Unlock()
	through := db.clog.Next() - 1
	start := time.Now()
	if err := db.applyCheckpoint(db.cur, through); err != nil {
		db.stats.FailedCheckpoints.Add(1)
		db.boltStale = true
		db.log.Error("checkpoint failed; the commit log keeps the writes", "err", err)
		return fmt.Errorf("checkpoint: %w", hideDir(err, db.path))
	}
	db.applied = through
	db.pubMu.Lock()
	db.pub = kv.NewLayer()
	db.pubMu.Unlock()
	db.cur = kv.NewLayer()
	db.lastCk, db.logAtCk = time.Now(), db.stats.LogBytes.Load()
	db.stats.LogAtCheckpoint.Store(db.logAtCk)
	db.stats.Checkpoints.Add(1)
	db.stats.CheckpointNanos.Add(uint64(time.Since(start)))
	if db.opts.afterCheckpoint != nil {
		db.opts.afterCheckpoint()
	}
	if err := db.clog.Trim(through); err != nil {
		db.log.Warn("trim the commit log", "err", err)
	}
	return nil
}

// applyCheckpoint writes l into the file with through as its last log
// record, in one synced bbolt commit. The writer's read transaction is
// closed first: a commit that grows the file waits for every reader.
func (db *DB) applyCheckpoint(l *kv.Layer, through uint64) error {
	db.closeWriteBase()
	if db.boltStale {
		if err := db.reopenBolt(); err != nil {
			return err
		}
	}
	btx, err := db.bolt.Load().Begin(true)
	if err != nil {
		return err
	}
	if err := l.ApplyToFill(btx, AppendFill); err != nil {
		_ = btx.Rollback()
		return err
	}
	if err := btx.Bucket(bucketMeta).Put(keyLogApplied, binary.BigEndian.AppendUint64(nil, through)); err != nil {
		_ = btx.Rollback()
		return err
	}
	if err := btx.Commit(); err != nil {
		return err
	}
	// The pages the commit wrote: those it allocated for its dirty nodes
	// (an overflow node, a block larger than a page, is several pages in
	// one write, which is why TxStats.Write, the count of writes, is not
	// it) and the meta page.
	st := btx.Stats()
	pages := uint64(st.GetPageCount()) + 1
	db.stats.Pages.Add(pages)
	db.stats.PageBytes.Add(pages * uint64(os.Getpagesize()))
	return nil
}

// requestCheckpoint has the writer checkpoint everything acknowledged
// so far, and waits for it.
func (db *DB) requestCheckpoint(ctx context.Context) error {
	req := &writeReq{ckpt: true, done: make(chan error, 1)}
	if err := db.enqueue(ctx, req); err != nil {
		return err
	}
	return <-req.done
}

// AppendFill is how full a checkpoint (and a compaction) packs the
// pages of a bucket (kv.Layer.ApplyToFill): the buckets whose keys are
// mostly appended in order, tasks (UUID v7 ids), their events, the
// retention index (by time), tier-1's routine buckets (t1/<routine>,
// keys by time) and its batch-id groups (t1_seen_o, a counting sender's
// in the order it counts), 95 %; the others bbolt's half page. A tier-1 block of a
// thousand-frame batch is about 1.4 KiB: at half a page two of them
// filled a page, and the file took 35 bytes per frame the log held in 22.
func AppendFill(names [][]byte) float64 {
	if len(names) == 1 && appendOnly[string(names[0])] || len(names) == 2 && string(names[0]) == appendNested {
		return 0.95
	}
	return 0
}

var appendOnly = map[string]bool{"tasks": true, "events": true, "finished": true, "idem_exp": true, "audit": true, "t1_seen_o": true}

// appendNested is the bucket whose nested buckets are appended in order.
const appendNested = "t1"
