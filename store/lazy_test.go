package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
)

// markSeen is a write of one mark (a record of no domain).
func markSeen(id string) func(*store.Tx) error {
	return func(tx *store.Tx) error { return putDoc(tx, id, nil) }
}

func seenMark(t *testing.T, db *store.DB, id string) bool {
	t.Helper()
	ok := false
	view(t, db, func(tx *store.Tx) error { ok = docs.Has(tx, []byte(id)); return nil })
	return ok
}

func TestUpdateLazy(t *testing.T) {
	ctx := context.Background()
	t.Run("joins the next commit", func(t *testing.T) {
		db := openDB(t, tempPath(t), store.Options{})
		done := make(chan error, 1)
		db.UpdateLazy(markSeen("lazy"), func(err error) { done <- err })
		c0 := db.Stats().Commits.Load()
		if err := db.Update(ctx, markSeen("now")); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("lazy write: %v", err)
			}
		default:
			t.Fatal("the lazy write was not committed with the next write")
		}
		if n := db.Stats().Commits.Load() - c0; n != 1 {
			t.Errorf("%d commits for a lazy write and a write, want 1", n)
		}
		if !seenMark(t, db, "lazy") || !seenMark(t, db, "now") {
			t.Error("a write is missing")
		}
	})
	t.Run("alone after a while", func(t *testing.T) {
		db := openDB(t, tempPath(t), store.Options{})
		done := make(chan error, 1)
		start := time.Now()
		db.UpdateLazy(markSeen("lazy"), func(err error) { done <- err })
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("lazy write: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a lazy write alone was never committed")
		}
		t.Logf("committed alone after %v", time.Since(start))
		if !seenMark(t, db, "lazy") {
			t.Error("the lazy write is missing")
		}
	})
	t.Run("committed by Close", func(t *testing.T) {
		path := tempPath(t)
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		db.UpdateLazy(markSeen("lazy"), func(err error) { done <- err })
		if err := db.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("lazy write at close: %v", err)
		}
		db.UpdateLazy(markSeen("late"), func(err error) { done <- err })
		if err := <-done; err != store.ErrClosed {
			t.Errorf("lazy write after Close: %v, want ErrClosed", err)
		}
		if db = openDB(t, path, store.Options{}); !seenMark(t, db, "lazy") {
			t.Error("the lazy write queued before Close is missing")
		}
	})
}
