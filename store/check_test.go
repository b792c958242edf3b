package store_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func TestCheck(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	putTasks(t, db, 7, "echo", wire.StatusCompleted)

	t.Run("healthy", func(t *testing.T) {
		rep, err := db.Check(context.Background())
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if !rep.OK || len(rep.Errors) != 0 {
			t.Errorf("Check = %+v, want OK without errors", rep)
		}
		if rep.Tasks != 7 || rep.SchemaVersion != store.SchemaVersion {
			t.Errorf("Check counted %d tasks, schema %d; want 7, %d", rep.Tasks, rep.SchemaVersion, store.SchemaVersion)
		}
	})

	bogus := newTask(t, "echo", wire.Status("exploded"), time.Now())
	noHistory := newTask(t, "echo", wire.StatusExecuting, time.Now())
	noHistory.History = nil
	update(t, db, func(tx *store.Tx) error {
		if err := tx.PutTask(bogus); err != nil {
			return err
		}
		return tx.PutTask(noHistory)
	})
	t.Run("bad records", func(t *testing.T) {
		rep, err := db.Check(context.Background())
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if rep.OK {
			t.Fatalf("Check = OK with a task in an unknown state")
		}
		if rep.Tasks != 9 {
			t.Errorf("Check counted %d tasks, want 9", rep.Tasks)
		}
		want := map[string]string{bogus.ID: `unknown status "exploded"`, noHistory.ID: "no history"}
		for id, msg := range want {
			found := false
			for _, e := range rep.Errors {
				if strings.Contains(e, id) && strings.Contains(e, msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("Check errors %q do not report task %s: %s", rep.Errors, id, msg)
			}
		}
		if len(rep.Errors) != 2 {
			t.Errorf("Check reported %d errors, want 2: %q", len(rep.Errors), rep.Errors)
		}
	})
}

func TestBackupWhileWriting(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	putTasks(t, db, 50, "seed", wire.StatusCompleted)

	var (
		mu        sync.Mutex
		committed []string
		wg        sync.WaitGroup
	)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100_000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				task := newTask(t, "load", wire.StatusCompleted, time.Now())
				if err := db.Update(context.Background(), func(tx *store.Tx) error { return tx.CreateTask(task) }); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				committed = append(committed, task.ID)
				mu.Unlock()
			}
		}()
	}
	// Let the writers get going, then snapshot what is committed so far.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(committed)
		mu.Unlock()
		if n >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	before := append([]string(nil), committed...)
	mu.Unlock()

	dst := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	var announced int64 = -1
	n, err := db.Backup(f, func(size int64) error { announced = size; return nil })
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("writer: %v", err)
	}
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if len(before) < 40 {
		t.Fatalf("only %d writes committed before the backup", len(before))
	}
	if n != announced {
		t.Errorf("Backup wrote %d bytes, announced %d", n, announced)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Size() != n {
		t.Errorf("backup file size = %v (%v), want %d", fi.Size(), err, n)
	}

	rep, err := store.CheckFile(context.Background(), dst)
	if err != nil {
		t.Fatalf("CheckFile(backup): %v", err)
	}
	if !rep.OK || rep.Tasks < 50+len(before) {
		t.Errorf("CheckFile(backup) = %+v, want OK with at least %d tasks", rep, 50+len(before))
	}
	bdb := openDB(t, dst, store.Options{})
	view(t, bdb, func(tx *store.Tx) error {
		for _, id := range before {
			if _, err := tx.Task(id); err != nil {
				t.Errorf("task %s committed before the backup: %v", id, err)
			}
		}
		return nil
	})
}

func TestBackupSizeCallbackAborts(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	errTooBig := errors.New("too big")
	var sink strings.Builder
	n, err := db.Backup(&sink, func(int64) error { return errTooBig })
	if !errors.Is(err, errTooBig) {
		t.Errorf("Backup with a refusing size callback = %v, want errTooBig", err)
	}
	if n != 0 || sink.Len() != 0 {
		t.Errorf("Backup wrote %d bytes (%d seen) after the size callback refused", n, sink.Len())
	}
}

func TestOfflineFiles(t *testing.T) {
	src := tempPath(t)
	db, err := store.Open(context.Background(), src, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	tasks := putTasks(t, db, 12, "echo", wire.StatusCompleted)

	t.Run("held open", func(t *testing.T) {
		t.Run("CheckFile", func(t *testing.T) {
			t.Parallel()
			if _, err := store.CheckFile(context.Background(), src); !errors.Is(err, store.ErrLocked) {
				t.Errorf("CheckFile of a served file = %v, want ErrLocked", err)
			}
		})
		t.Run("BackupFile", func(t *testing.T) {
			t.Parallel()
			dst := filepath.Join(t.TempDir(), "copy.db")
			if _, err := store.BackupFile(context.Background(), src, dst); !errors.Is(err, store.ErrLocked) {
				t.Errorf("BackupFile of a served file = %v, want ErrLocked", err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("BackupFile of a served file left %s behind (%v)", dst, err)
			}
		})
	})
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}

	t.Run("CheckFile", func(t *testing.T) {
		rep, err := store.CheckFile(context.Background(), src)
		if err != nil {
			t.Fatalf("CheckFile: %v", err)
		}
		if !rep.OK || rep.Tasks != 12 || rep.SchemaVersion != store.SchemaVersion {
			t.Errorf("CheckFile = %+v, want OK, 12 tasks, schema %d", rep, store.SchemaVersion)
		}
	})
	t.Run("BackupFile", func(t *testing.T) {
		dir := t.TempDir()
		dst := filepath.Join(dir, "copy.db")
		n, err := store.BackupFile(context.Background(), src, dst)
		if err != nil {
			t.Fatalf("BackupFile: %v", err)
		}
		fi, err := os.Stat(dst)
		if err != nil || fi.Size() != n || n == 0 {
			t.Fatalf("backup %s: size %v (%v), BackupFile said %d", dst, fi.Size(), err, n)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("backup directory holds %d files, want only the backup (temporary file left behind?)", len(entries))
		}
		copyDB := openDB(t, dst, store.Options{})
		view(t, copyDB, func(tx *store.Tx) error {
			for _, task := range tasks {
				if _, err := tx.Task(task.ID); err != nil {
					t.Errorf("task %s in the backup: %v", task.ID, err)
				}
			}
			return nil
		})
	})
	t.Run("missing file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "absent.db")
		if _, err := store.CheckFile(context.Background(), missing); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("CheckFile(missing) = %v, want ErrNotExist", err)
		}
		if _, err := store.BackupFile(context.Background(), missing, missing+".bak"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("BackupFile(missing) = %v, want ErrNotExist", err)
		}
		if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
			t.Error("CheckFile created the file it was asked to check")
		}
	})
}

// TestCheckWhileWriting: the live check (GET /admin/db/check, synapse db
// check while serving) runs beside the store's writer. bbolt's page check
// reads the database's current freelist, so on a read-only transaction a
// commit landing meanwhile made it report pages "reachable freed" or
// "unreachable unfreed" on a healthy file.
func TestCheckWhileWriting(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	putTasks(t, db, 50, "echo", wire.StatusCompleted)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2000 && ctx.Err() == nil; i++ {
			tk := newTask(t, "echo", wire.StatusCompleted, time.Now())
			tk.Payload = wire.JSONValue(`{"pad":"` + strings.Repeat("x", 3000) + `"}`)
			if err := db.Update(ctx, func(tx *store.Tx) error { return tx.CreateTask(tk) }); err != nil && ctx.Err() == nil {
				t.Errorf("Update: %v", err)
				return
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()

	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		rep, err := db.Check(context.Background())
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if !rep.OK {
			t.Fatalf("check %d while writing = %v, want no errors", i, rep.Errors)
		}
	}
}
