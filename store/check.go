package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/store/commitlog"
	"github.com/synapse-edge/synapse/store/kv"
	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

// CheckReport is the outcome of a consistency check.
type CheckReport struct {
	OK            bool     `json:"ok"`
	Errors        []string `json:"errors"`
	SchemaVersion int      `json:"schema_version"`
	Tasks         int      `json:"tasks"`
	// Log is what the commit log holds beyond the file's checkpoint.
	Log LogReport `json:"log"`
}

// LogReport is the commit log's part of a check.
type LogReport struct {
	// Checkpoint is the last log record the file holds.
	Checkpoint uint64 `json:"checkpoint"`
	Segments   int    `json:"segments"`
	// Records are the records the log holds, First to Last.
	Records uint64 `json:"records"`
	First   uint64 `json:"first,omitempty"`
	Last    uint64 `json:"last,omitempty"`
	// TornBytes are a crash's torn tail that the next open cuts off.
	TornBytes int64 `json:"torn_bytes,omitempty"`
}

const maxCheckErrors = 100

// CheckFunc is a domain's check of its records (tier1.CheckRecords):
// it reads them in tx and calls add with each problem it finds, a line
// of the report. The store checks its own buckets; a domain's records
// are checked by the domain, passed to [DB.Check] and [CheckFile].
type CheckFunc func(tx *Tx, add func(format string, args ...any))

// Check verifies the file's page structure (bbolt's own check), that every
// bucket exists, the commit log (every record's CRC, the sequence numbers
// continuous, the checkpoint the file names held by the log), and on a
// snapshot of everything acknowledged that every task record decodes and
// has a known state, and runs checks (the domains' records) on that
// snapshot too.
//
// It runs on a read snapshot and never holds the writer; checkpoints
// wait for it (bbolt's page check reads the database's current freelist,
// so a commit landing meanwhile would show pages of a healthy file as
// both reachable and freed, or as neither).
func (db *DB) Check(ctx context.Context, checks ...CheckFunc) (CheckReport, error) {
	db.ckMu.RLock()
	defer db.ckMu.RUnlock()
	btx, l, err := db.snapshot()
	if err != nil {
		return CheckReport{}, fmt.Errorf("check: %w", err)
	}
	defer func() { _ = btx.Rollback() }()
	rep := check(ctx, btx, &Tx{v: kv.NewView(l, btx, false)}, checks)
	checkLog(&rep, LogDir(db.path), db.applied, db.logLast.Load(), db.opts.logFS, nil)
	return rep, nil
}

// checkLog verifies the log in dir against the checkpoint, calling fn
// with each record after it, and adds what it found to rep.
// upTo (0: all) bounds the records verified: a live check stops at the
// last one the writer has finished.
func checkLog(rep *CheckReport, dir string, checkpoint, upTo uint64, fsys commitlog.FS, fn func(uint64, []byte) error) {
	rep.Log = LogReport{Checkpoint: checkpoint}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && fsys == nil {
		return // a file of schema 6 or before, never opened since
	}
	lr, err := commitlog.ScanUpTo(dir, checkpoint, upTo, fsys, fn)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("commit log: %v", err))
		rep.OK = false
		return
	}
	rep.Log.Segments, rep.Log.Records, rep.Log.First, rep.Log.Last, rep.Log.TornBytes = lr.Segments, lr.Records, lr.First, lr.Last, lr.TornBytes
}

func check(ctx context.Context, btx *bolt.Tx, tx *Tx, checks []CheckFunc) CheckReport {
	rep := CheckReport{Errors: []string{}}
	add := func(format string, args ...any) {
		if len(rep.Errors) < maxCheckErrors {
			rep.Errors = append(rep.Errors, fmt.Sprintf(format, args...))
		}
	}
	for err := range btx.Check() {
		add("page structure: %v", err)
	}
	for _, name := range allBuckets {
		if btx.Bucket(name) == nil {
			add("bucket %q is missing", name)
		}
	}
	rep.SchemaVersion = tx.SchemaVersion()
	if rep.SchemaVersion < 1 || rep.SchemaVersion > SchemaVersion {
		add("schema version %d, want 1 to %d", rep.SchemaVersion, SchemaVersion)
	}
	if b := tx.root(bucketTasks); b != nil {
		_ = b.ForEach(func(k, v []byte) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rep.Tasks++
			t, err := tx.Task(string(k))
			switch {
			case err != nil:
				add("task %q: %v", k, err)
			case t.ID != string(k):
				add("task %q: record says id %q", k, t.ID)
			case !t.Status.Valid():
				add("task %q: unknown status %q", k, t.Status)
			case len(t.History) == 0 && t.Status != wire.StatusIdle:
				add("task %q: no history", k)
			default:
				if err := checkKeptEvents(t.ID, v); err != nil {
					add("task %q: %v", k, err)
				}
			}
			return nil
		})
		if err := ctx.Err(); err != nil {
			// Not "ok" with a part of the tasks counted.
			add("check stopped after %d tasks: %v", rep.Tasks, err)
		}
	}
	for _, c := range checks {
		c(tx, add)
	}
	rep.OK = len(rep.Errors) == 0
	return rep
}

// checkKeptEvents verifies the events kept in a task record: they decode,
// belong to the task and are numbered from 1 without gaps.
func checkKeptEvents(id string, rec []byte) error {
	evs, err := taskrec.KeptEvents(id, rec, 0, 0, nil)
	if err != nil {
		return fmt.Errorf("events kept with the task: %w", err)
	}
	for i, e := range evs {
		if e == nil || e.TaskID != id || e.Seq != uint64(i)+1 {
			return fmt.Errorf("event %d kept with the task is not the task's event %d", i, i+1)
		}
	}
	return nil
}

// Backup writes a consistent copy of the whole file to w while writes go on,
// and returns the number of bytes written. If size is not nil it is called
// first with the exact number of bytes that will be written. The copy
// holds every write acknowledged before Backup was called: the writer
// checkpoints them first, and checkpoints wait while the copy is made.
func (db *DB) Backup(w io.Writer, size func(int64) error) (int64, error) {
	if err := db.requestCheckpoint(context.Background()); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	db.ckMu.RLock()
	defer db.ckMu.RUnlock()
	var n int64
	err := db.bolt.Load().View(func(btx *bolt.Tx) error {
		if size != nil {
			if err := size(btx.Size()); err != nil {
				return err
			}
		}
		var err error
		n, err = btx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// CheckFile checks a data file that no process is serving, as
// [DB.Check] does.
func CheckFile(ctx context.Context, path string, checks ...CheckFunc) (CheckReport, error) {
	if _, err := os.Stat(path); err != nil {
		return CheckReport{}, fmt.Errorf("check %s: %w", path, err)
	}
	var rep CheckReport
	err := viewFile(path, func(fv fileView) error {
		rep = check(ctx, fv.btx, fv.tx, checks)
		logRep := fv.log
		rep.Log = logRep.Log
		if len(logRep.Errors) > 0 {
			rep.Errors = append(rep.Errors, logRep.Errors...)
			rep.OK = false
		}
		return nil
	})
	if err != nil {
		return CheckReport{}, fmt.Errorf("check %s: %w", path, err)
	}
	return rep, nil
}

// openFileReadOnly opens a data file that no process is serving, read
// only.
func openFileReadOnly(path string) (*bolt.DB, error) {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err == bolt.ErrTimeout {
		err = ErrLocked
	}
	return bdb, err
}

// fileView is a data file that no process is serving, read: tx over
// its log, btx the file alone, log the log's part of a check.
type fileView struct {
	tx  *Tx
	btx *bolt.Tx
	log CheckReport
}

// viewFile runs fn in a read transaction of a data file that no process
// is serving, over what its commit log holds beyond the checkpoint (read,
// not changed), with the log's part of a check.
func viewFile(path string, fn func(fileView) error) error {
	bdb, err := openFileReadOnly(path)
	if err != nil {
		return err
	}
	defer bdb.Close()
	return bdb.View(func(btx *bolt.Tx) error {
		applied, err := logApplied(btx)
		if err != nil {
			return err
		}
		l := kv.NewLayer()
		var logRep CheckReport
		checkLog(&logRep, LogDir(path), applied, 0, nil, func(seq uint64, p []byte) error {
			if err := l.Replay(p); err != nil {
				return fmt.Errorf("record %d: %w", seq, err)
			}
			return nil
		})
		return fn(fileView{tx: &Tx{v: kv.NewView(l, btx, false)}, btx: btx, log: logRep})
	})
}

// LogStateFile reads what the commit log of a data file that no process
// is serving holds beyond the file's checkpoint (and its errors).
func LogStateFile(path string) (LogReport, []string, error) {
	var lr CheckReport
	err := viewFile(path, func(fv fileView) error { lr = fv.log; return nil })
	return lr.Log, lr.Errors, err
}

// BackupFile copies a data file that no process is serving to dst (through a
// temporary file renamed into place) and returns the bytes written. What
// its commit log holds beyond the checkpoint is written into the copy,
// which needs no log.
func BackupFile(ctx context.Context, src, dst string) (int64, error) {
	if _, err := os.Stat(src); err != nil {
		return 0, fmt.Errorf("backup %s: %w", src, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".synapse-backup-*")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	var n int64
	var rest *kv.Layer
	var through uint64
	err = viewFile(src, func(fv fileView) error {
		if len(fv.log.Errors) > 0 {
			return errors.New(fv.log.Errors[0])
		}
		rest, through = fv.tx.v.Layer(), fv.log.Log.Last
		var err error
		n, err = fv.btx.WriteTo(tmp)
		return err
	})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && !rest.Empty() {
		err = applyToFile(tmp.Name(), rest, through)
		if fi, serr := os.Stat(tmp.Name()); err == nil && serr == nil {
			n = fi.Size()
		}
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return 0, fmt.Errorf("backup to %s: %w", dst, err)
	}
	return n, ctx.Err()
}

// applyToFile writes l into the data file at path, through being the
// last log record it then holds.
func applyToFile(path string, l *kv.Layer, through uint64) error {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return err
	}
	err = bdb.Update(func(btx *bolt.Tx) error {
		if err := l.ApplyTo(btx); err != nil {
			return err
		}
		return btx.Bucket(bucketMeta).Put(keyLogApplied, binary.BigEndian.AppendUint64(nil, through))
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	return err
}

// ViewFile runs fn in a read transaction of a data file that no process
// is serving, over what its commit log holds beyond the checkpoint
// (read, not changed): how a domain reads its records of a stopped
// agent's file (synapse db audit).
func ViewFile(ctx context.Context, path string, fn func(*Tx) error) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	return viewFile(path, func(fv fileView) error {
		if err := fn(fv.tx); err != nil {
			return err
		}
		return ctx.Err()
	})
}
