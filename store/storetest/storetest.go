// Package storetest opens real data files for the tests of the packages
// that keep their records in the store (store.Records): a fresh file in
// the test's temporary directory, closed when the test ends, and
// transactions that fail the test on error.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/store"
)

// Open opens a fresh data file in tb's temporary directory and closes it
// when the test ends.
func Open(tb testing.TB) *store.DB {
	tb.Helper()
	return OpenPath(tb, filepath.Join(tb.TempDir(), store.FileName))
}

// OpenPath opens the data file at path and closes it when the test ends.
func OpenPath(tb testing.TB, path string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), path, store.Options{})
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

// Update runs fn in a write transaction and fails the test on error.
func Update(tb testing.TB, db *store.DB, fn func(*store.Tx) error) {
	tb.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		tb.Fatalf("Update: %v", err)
	}
}

// View runs fn in a read transaction and fails the test on error.
func View(tb testing.TB, db *store.DB, fn func(*store.Tx) error) {
	tb.Helper()
	if err := db.View(fn); err != nil {
		tb.Fatalf("View: %v", err)
	}
}
