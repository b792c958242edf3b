package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/wire"
)

// CheckReport is the outcome of a consistency check.
type CheckReport struct {
	OK            bool     `json:"ok"`
	Errors        []string `json:"errors"`
	SchemaVersion int      `json:"schema_version"`
	Tasks         int      `json:"tasks"`
}

const maxCheckErrors = 100

// Check verifies the file's page structure (bbolt's own check), that every
// bucket exists, that every task record decodes and has a known state, and
// that the tier-1 batch-id table's records are well formed.
//
// It runs in a writable transaction that is rolled back: bbolt's page
// check reads the database's current freelist, so on a read-only
// transaction a commit landing meanwhile shows pages of a healthy file as
// both reachable and freed, or as neither. Writers wait for the check.
func (db *DB) Check(ctx context.Context) (CheckReport, error) {
	btx, err := db.bolt.Load().Begin(true)
	if err != nil {
		return CheckReport{}, fmt.Errorf("check: %w", err)
	}
	defer func() { _ = btx.Rollback() }()
	return check(ctx, btx), nil
}

func check(ctx context.Context, btx *bolt.Tx) CheckReport {
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
	tx := &Tx{tx: btx}
	rep.SchemaVersion = tx.SchemaVersion()
	if rep.SchemaVersion < 1 || rep.SchemaVersion > SchemaVersion {
		add("schema version %d, want 1 to %d", rep.SchemaVersion, SchemaVersion)
	}
	if b := btx.Bucket(bucketTasks); b != nil {
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
	}
	checkT1Seen(tx, add)
	rep.OK = len(rep.Errors) == 0
	return rep
}

// checkKeptEvents verifies the events kept in a task record: they decode,
// belong to the task and are numbered from 1 without gaps.
func checkKeptEvents(id string, rec []byte) error {
	_, kept, err := splitTaskRecord(rec)
	if err != nil || len(kept) == 0 {
		return err
	}
	var evs []*wire.Event
	if err := json.Unmarshal(kept, &evs); err != nil {
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
// first with the exact number of bytes that will be written.
func (db *DB) Backup(w io.Writer, size func(int64) error) (int64, error) {
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

// CheckFile checks a data file that no process is serving.
func CheckFile(ctx context.Context, path string) (CheckReport, error) {
	if _, err := os.Stat(path); err != nil {
		return CheckReport{}, fmt.Errorf("check %s: %w", path, err)
	}
	bdb, err := openFileReadOnly(path)
	if err != nil {
		return CheckReport{}, fmt.Errorf("check %s: %w", path, err)
	}
	defer bdb.Close()
	var rep CheckReport
	err = bdb.View(func(btx *bolt.Tx) error {
		rep = check(ctx, btx)
		return nil
	})
	return rep, err
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

// viewFile runs fn in a read transaction of a data file that no process
// is serving.
func viewFile(path string, fn func(*Tx) error) error {
	bdb, err := openFileReadOnly(path)
	if err != nil {
		return err
	}
	defer bdb.Close()
	return bdb.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) })
}

// BackupFile copies a data file that no process is serving to dst (through a
// temporary file renamed into place) and returns the bytes written.
func BackupFile(ctx context.Context, src, dst string) (int64, error) {
	if _, err := os.Stat(src); err != nil {
		return 0, fmt.Errorf("backup %s: %w", src, err)
	}
	bdb, err := bolt.Open(src, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		if err == bolt.ErrTimeout {
			err = ErrLocked
		}
		return 0, fmt.Errorf("backup %s: %w", src, err)
	}
	defer bdb.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".synapse-backup-*")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer os.Remove(tmp.Name())
	var n int64
	err = bdb.View(func(btx *bolt.Tx) error {
		var err error
		n, err = btx.WriteTo(tmp)
		return err
	})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return 0, fmt.Errorf("backup to %s: %w", dst, err)
	}
	return n, nil
}
