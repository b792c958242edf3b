package store_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func TestOpenWritesSchemaVersion(t *testing.T) {
	path := tempPath(t)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	var got int
	var raw []byte
	view(t, db, func(tx *store.Tx) error {
		got, raw = tx.SchemaVersion(), tx.Meta("schema_version")
		return nil
	})
	if got != store.SchemaVersion {
		t.Errorf("SchemaVersion() = %d, want %d", got, store.SchemaVersion)
	}
	if want := binary.BigEndian.AppendUint32(nil, store.SchemaVersion); string(raw) != string(want) {
		t.Errorf("meta schema_version = %x, want %x (uint32 big-endian)", raw, want)
	}
	update(t, db, func(tx *store.Tx) error { return tx.PutMeta("greeting", []byte("hello")) })
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}

	t.Run("reopen", func(t *testing.T) {
		db := openDB(t, path, store.Options{})
		view(t, db, func(tx *store.Tx) error {
			if got := tx.SchemaVersion(); got != store.SchemaVersion {
				t.Errorf("SchemaVersion() after reopen = %d, want %d", got, store.SchemaVersion)
			}
			if got := string(tx.Meta("greeting")); got != "hello" {
				t.Errorf("Meta(greeting) after reopen = %q, want %q", got, "hello")
			}
			if got := tx.Meta("absent"); got != nil {
				t.Errorf("Meta(absent) = %q, want nil", got)
			}
			return nil
		})
	})
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := tempPath(t)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	newer := binary.BigEndian.AppendUint32(nil, store.SchemaVersion+1)
	update(t, db, func(tx *store.Tx) error { return tx.PutMeta("schema_version", newer) })
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db2, err := store.Open(context.Background(), path, store.Options{})
	if err == nil {
		db2.Close(context.Background())
		t.Fatal("Open of a file with a newer schema succeeded, want ErrSchemaTooNew")
	}
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open error = %v, want ErrSchemaTooNew", err)
	}
	// The refused open must not have rewritten the version.
	rep, err := store.CheckFile(context.Background(), path)
	if err != nil {
		t.Fatalf("CheckFile: %v", err)
	}
	if got, want := rep.SchemaVersion, store.SchemaVersion+1; got != want {
		t.Errorf("schema version after refused open = %d, want %d (unchanged)", got, want)
	}
	if rep.OK {
		t.Error("CheckFile of a newer-schema file reported OK")
	}
}

func TestOpenRefusesCorruptSchemaRecord(t *testing.T) {
	path := tempPath(t)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	update(t, db, func(tx *store.Tx) error { return tx.PutMeta("schema_version", []byte{0, 1}) })
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db2, err := store.Open(context.Background(), path, store.Options{})
	if err == nil {
		db2.Close(context.Background())
		t.Fatal("Open with a 2-byte schema_version succeeded")
	}
	if !strings.Contains(err.Error(), "schema_version") {
		t.Errorf("error %q does not mention schema_version", err)
	}
}

func TestOpenLocked(t *testing.T) {
	path := tempPath(t)
	first, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	start := time.Now()
	second, err := store.Open(context.Background(), path, store.Options{LockTimeout: 200 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil {
		second.Close(context.Background())
		t.Fatal("second Open of a held file succeeded")
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Errorf("second Open error = %v, want ErrLocked", err)
	}
	if elapsed < 150*time.Millisecond || elapsed > time.Second {
		t.Errorf("second Open failed after %v, want about the 200ms lock timeout", elapsed)
	}
	if err := first.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	third, err := store.Open(context.Background(), path, store.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Open after the holder closed: %v", err)
	}
	third.Close(context.Background())
}

func TestGroupCommit(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	const writers = 200
	ids := make([]string, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		task := newTask(t, "echo", wire.StatusConfirmed, time.Now())
		ids[i] = task.ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = db.Update(context.Background(), func(tx *store.Tx) error { return tx.CreateTask(task) })
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	view(t, db, func(tx *store.Tx) error {
		if got := tx.CountTasks(); got != writers {
			t.Errorf("CountTasks() = %d, want %d", got, writers)
		}
		for _, id := range ids {
			if _, err := tx.Task(id); err != nil {
				t.Errorf("Task(%s): %v", id, err)
			}
		}
		return nil
	})
	commits, writes := db.Stats().Commits.Load(), db.Stats().Writes.Load()
	if writes != writers {
		t.Errorf("Stats().Writes = %d, want %d", writes, writers)
	}
	if commits >= writes {
		t.Errorf("Stats().Commits = %d for %d writes: no write was grouped", commits, writes)
	}
	t.Logf("%d writes in %d commits", writes, commits)
}

// blockWriter queues a write that holds the writer goroutine until the
// returned release function is called; the caller can then queue writes that
// are certain to be grouped into the next transaction.
func blockWriter(t *testing.T, db *store.DB) (release func(), done <-chan error) {
	t.Helper()
	entered, hold := make(chan struct{}), make(chan struct{})
	result := make(chan error, 1)
	db.UpdateAsync(func(tx *store.Tx) error {
		close(entered)
		<-hold
		return nil
	}, func(err error) { result <- err })
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not start the blocking write")
	}
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return release, result
}

// waitAll collects n callback results or fails after a deadline.
func waitAll(t *testing.T, ch <-chan error, n int) []error {
	t.Helper()
	out := make([]error, 0, n)
	deadline := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case err := <-ch:
			out = append(out, err)
		case <-deadline:
			t.Fatalf("got %d of %d write outcomes before the deadline", len(out), n)
		}
	}
	return out
}

func TestGroupCommitFailedWriteIsolated(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	release, first := blockWriter(t, db)

	errBoom := errors.New("boom")
	type outcome struct {
		name string
		err  error
	}
	results := make(chan outcome, 16)
	// Each successful write increments a counter: if a write that was run
	// before the failure were applied twice, the counter would show it.
	incr := func(tx *store.Tx) error {
		n := 0
		if v := tx.Meta("counter"); v != nil {
			n, _ = strconv.Atoi(string(v))
		}
		return tx.PutMeta("counter", []byte(strconv.Itoa(n+1)))
	}
	for i := range 11 {
		name := fmt.Sprintf("ok%d", i)
		fn := func(tx *store.Tx) error {
			if err := incr(tx); err != nil {
				return err
			}
			return tx.PutMeta(name, []byte("x"))
		}
		if i == 5 {
			name = "bad"
			fn = func(tx *store.Tx) error {
				if err := tx.PutMeta("bad", []byte("x")); err != nil {
					return err
				}
				return errBoom
			}
		}
		db.UpdateAsync(fn, func(err error) { results <- outcome{name, err} })
	}
	release()
	if err := waitAll(t, first, 1)[0]; err != nil {
		t.Fatalf("blocking write: %v", err)
	}
	deadline := time.After(10 * time.Second)
	for range 11 {
		select {
		case o := <-results:
			switch {
			case o.name == "bad" && !errors.Is(o.err, errBoom):
				t.Errorf("failing write got %v, want errBoom", o.err)
			case o.name != "bad" && o.err != nil:
				t.Errorf("write %s got %v, want nil", o.name, o.err)
			}
		case <-deadline:
			t.Fatal("not every write got its outcome")
		}
	}
	view(t, db, func(tx *store.Tx) error {
		if v := tx.Meta("bad"); v != nil {
			t.Errorf("the failed write's key is present (%q), want absent", v)
		}
		for i := range 11 {
			if i == 5 {
				continue
			}
			if tx.Meta(fmt.Sprintf("ok%d", i)) == nil {
				t.Errorf("key ok%d of a successful write is missing", i)
			}
		}
		if got := string(tx.Meta("counter")); got != "10" {
			t.Errorf("counter = %q, want 10 (each successful write applied once)", got)
		}
		return nil
	})
	// The blocking write alone, then the ten others in one transaction.
	if got := db.Stats().Commits.Load(); got != 2 {
		t.Errorf("Stats().Commits = %d, want 2", got)
	}
	if got := db.Stats().Writes.Load(); got != 11 {
		t.Errorf("Stats().Writes = %d, want 11", got)
	}
}

func TestWritePanicIsAnError(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		if err := tx.PutMeta("before-panic", []byte("x")); err != nil {
			return err
		}
		panic("kaboom")
	})
	if err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("Update with a panicking fn = %v, want an error naming the panic", err)
	}
	update(t, db, func(tx *store.Tx) error { return tx.PutMeta("after-panic", []byte("y")) })
	view(t, db, func(tx *store.Tx) error {
		if tx.Meta("before-panic") != nil {
			t.Error("the panicking write's key is present")
		}
		if got := string(tx.Meta("after-panic")); got != "y" {
			t.Errorf("write after the panic: Meta = %q, want y", got)
		}
		return nil
	})
}

func TestCloseCommitsQueuedWrites(t *testing.T) {
	path := tempPath(t)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	release, first := blockWriter(t, db)
	const n = 100
	results := make(chan error, n)
	for i := range n {
		key := fmt.Sprintf("k%03d", i)
		db.UpdateAsync(func(tx *store.Tx) error { return tx.PutMeta(key, []byte("v")) }, func(err error) { results <- err })
	}
	closed := make(chan error, 1)
	go func() { closed <- db.Close(context.Background()) }()
	release()
	if err := waitAll(t, first, 1)[0]; err != nil {
		t.Fatalf("blocking write: %v", err)
	}
	for i, err := range waitAll(t, results, n) {
		if err != nil {
			t.Errorf("queued write %d: %v", i, err)
		}
	}
	if err := waitAll(t, closed, 1)[0]; err != nil {
		t.Fatalf("Close: %v", err)
	}
	db = openDB(t, path, store.Options{})
	view(t, db, func(tx *store.Tx) error {
		for i := range n {
			if tx.Meta(fmt.Sprintf("k%03d", i)) == nil {
				t.Errorf("write k%03d queued before Close is missing after reopen", i)
			}
		}
		return nil
	})
}

func TestClosed(t *testing.T) {
	db, err := store.Open(context.Background(), tempPath(t), store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v, want nil (idempotent)", err)
	}

	t.Run("Update", func(t *testing.T) {
		// Repeat: a racy implementation fails only some of the time.
		for i := range 50 {
			got := make(chan error, 1)
			ran := make(chan struct{}, 1)
			go func() {
				got <- db.Update(context.Background(), func(*store.Tx) error { ran <- struct{}{}; return nil })
			}()
			select {
			case err := <-got:
				if !errors.Is(err, store.ErrClosed) {
					t.Fatalf("Update #%d after Close = %v, want ErrClosed", i, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Update #%d after Close did not return", i)
			}
			select {
			case <-ran:
				t.Fatalf("Update #%d after Close ran its fn", i)
			default:
			}
		}
	})
	t.Run("UpdateAsync", func(t *testing.T) {
		for i := range 50 {
			got := make(chan error, 1)
			db.UpdateAsync(func(*store.Tx) error { return nil }, func(err error) { got <- err })
			select {
			case err := <-got:
				if !errors.Is(err, store.ErrClosed) {
					t.Fatalf("UpdateAsync #%d after Close: cb got %v, want ErrClosed", i, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("UpdateAsync #%d after Close never called its callback", i)
			}
		}
	})
}

func TestUpdateContextWhileQueueFull(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{QueueSize: 1})
	release, first := blockWriter(t, db)
	queued := make(chan error, 1)
	db.UpdateAsync(func(tx *store.Tx) error { return tx.PutMeta("queued", []byte("1")) }, func(err error) { queued <- err })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ran := make(chan struct{}, 1)
	err := db.Update(ctx, func(tx *store.Tx) error {
		ran <- struct{}{}
		return tx.PutMeta("late", []byte("1"))
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Update with a full queue and an expiring ctx = %v, want DeadlineExceeded", err)
	}
	release()
	waitAll(t, first, 1)
	if err := waitAll(t, queued, 1)[0]; err != nil {
		t.Fatalf("queued write: %v", err)
	}
	select {
	case <-ran:
		t.Error("the write refused for its ctx was run anyway")
	default:
	}
	view(t, db, func(tx *store.Tx) error {
		if tx.Meta("late") != nil {
			t.Error("the refused write's key is present")
		}
		return nil
	})
}
