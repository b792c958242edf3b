package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
)

// TestOutcomeUnknown (issue #28): a commit whose fdatasync fails after
// its writes reached the file is reported as ErrOutcomeUnknown, never as
// "not stored"; the store reopens the file, so what it reads is what the
// file holds (the write is there, once, after a reopen of the process);
// the health probe makes Health nil again soon after the fault clears,
// with no client write.
func TestOutcomeUnknown(t *testing.T) {
	var fail atomic.Bool
	disk := errors.New("injected: fdatasync: input/output error")
	path := filepath.Join(t.TempDir(), "o.db")
	opts := store.Options{SyncFault: func() error {
		if fail.Load() {
			return disk
		}
		return nil
	}}
	db, err := store.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	put := func(id string) error {
		return db.Update(context.Background(), func(tx *store.Tx) error { return putDoc(tx, id, []byte(`{}`)) })
	}
	fail.Store(true)
	err = put("phantom")
	if !errors.Is(err, store.ErrOutcomeUnknown) || !errors.Is(err, disk) {
		t.Fatalf("Update whose sync fails = %v, want ErrOutcomeUnknown wrapping the injected error", err)
	}
	if err := db.Health(); err == nil {
		t.Error("Health after a failed sync is nil")
	}
	if err := db.View(func(tx *store.Tx) error { _, err := getDoc(tx, "phantom"); return err }); err != nil {
		t.Errorf("the write of unknown outcome is in the file yet not read: %v", err)
	}
	fail.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for db.Health() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Health still %v 10 s after the fault cleared, with the probe running", db.Health())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := put("after"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	for _, id := range []string{"phantom", "after"} {
		if err := db.View(func(tx *store.Tx) error { _, err := getDoc(tx, id); return err }); err != nil {
			t.Errorf("group %s after a reopen: %v", id, err)
		}
	}
	rep, err := db.Check(context.Background())
	if err != nil || len(rep.Errors) > 0 {
		t.Errorf("db check after the fault: %v %v", err, rep.Errors)
	}
}
