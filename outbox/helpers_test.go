package outbox_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/store"
)

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

func update(tb testing.TB, db *store.DB, fn func(*store.Tx) error) {
	tb.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		tb.Fatalf("Update: %v", err)
	}
}

func view(tb testing.TB, db *store.DB, fn func(*store.Tx) error) {
	tb.Helper()
	if err := db.View(fn); err != nil {
		tb.Fatalf("View: %v", err)
	}
}

// copyFixture copies testdata/name to a new data file of the test.
func copyFixture(tb testing.TB, name string) string {
	tb.Helper()
	src, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	defer src.Close()
	path := tempPath(tb)
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		tb.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}
