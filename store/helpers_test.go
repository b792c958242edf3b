package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// tempPath is a fresh data file path in t's temporary directory.
func tempPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), store.FileName)
}

// openDB opens path and closes it when the test ends.
func openDB(tb testing.TB, path string, opts store.Options) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(context.Background()); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return db
}

// update runs fn in a write transaction and fails the test on error.
func update(tb testing.TB, db *store.DB, fn func(*store.Tx) error) {
	tb.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		tb.Fatalf("Update: %v", err)
	}
}

// view runs fn in a read transaction and fails the test on error.
func view(tb testing.TB, db *store.DB, fn func(*store.Tx) error) {
	tb.Helper()
	if err := db.View(fn); err != nil {
		tb.Fatalf("View: %v", err)
	}
}

// newTask builds a task with a UUID v7 id in state st, last updated at at,
// with a history that leads to st.
func newTask(tb testing.TB, typ string, st wire.Status, at time.Time) *wire.Task {
	tb.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		tb.Fatalf("uuid: %v", err)
	}
	return &wire.Task{
		ID: id.String(), Type: typ, Status: st, Payload: wire.JSONValue(`{}`),
		CreatedAt: at, UpdatedAt: at,
		History: []wire.Transition{{From: wire.StatusIdle, Status: st, At: wire.Time{Time: at}}},
	}
}

// putTasks creates n tasks of type typ in state st and returns them oldest first.
func putTasks(tb testing.TB, db *store.DB, n int, typ string, st wire.Status) []*wire.Task {
	tb.Helper()
	out := make([]*wire.Task, n)
	now := time.Now()
	for i := range out {
		out[i] = newTask(tb, typ, st, now.Add(time.Duration(i)*time.Millisecond))
	}
	update(tb, db, func(tx *store.Tx) error {
		for _, t := range out {
			if err := tx.CreateTask(t); err != nil {
				return err
			}
		}
		return nil
	})
	return out
}

// taskExists reports whether the task id is stored.
func taskExists(tb testing.TB, db *store.DB, id string) bool {
	tb.Helper()
	found := false
	view(tb, db, func(tx *store.Tx) error {
		_, err := tx.Task(id)
		switch {
		case err == nil:
			found = true
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		return nil
	})
	return found
}

// docs are records of no domain, for the tests of the store's own
// machinery (outcomes, health) that need a write of some record.
var docs = store.RawRecords("test_docs")

func putDoc(tx *store.Tx, id string, doc []byte) error { return docs.Put(tx, []byte(id), &doc) }

func getDoc(tx *store.Tx, id string) ([]byte, error) {
	v, err := docs.Get(tx, []byte(id))
	if err != nil {
		return nil, err
	}
	return *v, nil
}
