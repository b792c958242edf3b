package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/synapse-edge/synapse/store"
)

// TestHealth: a failed commit makes Health report it until a commit
// succeeds; nothing of the failed transaction is kept; Close makes it
// ErrClosed.
func TestHealth(t *testing.T) {
	var fail atomic.Bool
	disk := errors.New("injected: input/output error")
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := store.Open(context.Background(), path, store.Options{Fault: func() error {
		if fail.Load() {
			return disk
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string) error {
		return db.Update(context.Background(), func(tx *store.Tx) error { return putDoc(tx, id, []byte(`{}`)) })
	}
	if err := db.Health(); err != nil {
		t.Fatalf("Health of a fresh store = %v", err)
	}
	fail.Store(true)
	if err := put("lost"); !errors.Is(err, disk) {
		t.Fatalf("Update with a failing disk = %v, want the injected error", err)
	}
	if err := db.Health(); !errors.Is(err, disk) {
		t.Errorf("Health after a failed commit = %v, want the injected error", err)
	}
	fail.Store(false)
	if err := put("kept"); err != nil {
		t.Fatal(err)
	}
	if err := db.Health(); err != nil {
		t.Errorf("Health after a good commit = %v", err)
	}
	_ = db.View(func(tx *store.Tx) error {
		if _, err := getDoc(tx, "lost"); err == nil {
			t.Error("the failed transaction's write is there")
		}
		if _, err := getDoc(tx, "kept"); err != nil {
			t.Errorf("the good write is missing: %v", err)
		}
		return nil
	})
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := db.Health(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Health after Close = %v, want ErrClosed", err)
	}
}
