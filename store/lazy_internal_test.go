package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// holdDocs are records of no domain, for TestHold.
var holdDocs = RawRecords("test_docs")

// TestHold: a write the writer took while a hold is on waits for the
// writes queued after it, and they commit together.
func TestHold(t *testing.T) {
	defer func(d time.Duration) { holdMax = d }(holdMax)
	holdMax = time.Minute // the test, not the bound, releases the hold
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	c0 := db.Stats().Commits.Load()
	release := db.Hold()
	done := make(chan error, 2)
	cb := func(err error) { done <- err }
	db.UpdateAsync(func(tx *Tx) error { return holdDocs.Put(tx, []byte("a"), new([]byte)) }, cb)
	for deadline := time.Now().Add(10 * time.Second); len(db.writes) > 0; { // the writer took it
		if time.Now().After(deadline) {
			t.Fatal("the writer did not take the write")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	db.UpdateAsync(func(tx *Tx) error { return holdDocs.Put(tx, []byte("b"), new([]byte)) }, cb)
	release()
	release() // a second call does nothing
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := db.Stats().Commits.Load() - c0; n != 1 {
		t.Errorf("%d commits for two writes under one hold, want 1", n)
	}
	if db.lz.holds.Load() != 0 {
		t.Errorf("holds = %d after release", db.lz.holds.Load())
	}
}
