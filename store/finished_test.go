package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/wire"
)

// createFinal creates n tasks final with their events (as the sync mode
// does) in separate commits and returns their ids.
func createFinal(t *testing.T, db *DB, n int, at time.Time) []string {
	t.Helper()
	var ids []string
	for i := range n {
		now := at.Add(time.Duration(i) * time.Millisecond)
		task := &wire.Task{ID: fmt.Sprintf("%08x-%04x-7000-8000-%012x", now.UnixMilli()>>16, now.UnixMilli()&0xffff, i),
			Type: "echo", Status: wire.StatusCompleted, Payload: wire.JSONValue(`{}`), CreatedAt: now, UpdatedAt: now, Seq: 1,
			History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusCompleted, At: wire.Time{Time: now}}}}
		ev := &wire.Event{TaskID: task.ID, Seq: 1, Type: wire.EventComplete, At: wire.Time{Time: now}, Data: wire.JSONValue(`{}`)}
		if err := db.Update(context.Background(), func(tx *Tx) error {
			rec, err := EncodeTask(task, []*wire.Event{ev})
			if err != nil {
				return err
			}
			return tx.CreateRecord(rec)
		}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	return ids
}

func indexed(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	db.View(func(tx *Tx) error { n = tx.b(bucketFinished).KeyN(); return nil })
	return n
}

// Tasks created final are indexed in later commits: a batch of them at a
// time, before PruneFinished reads the index, and at Close.
func TestFinishedDeferred(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.fin.age = time.Hour // no flush by age on a slow machine
	old := time.Now().Add(-time.Hour)
	createFinal(t, db, 10, old)
	if n := indexed(t, db); n != 0 {
		t.Fatalf("%d entries indexed in the tasks' own commits, want them deferred", n)
	}
	var pruned int
	if err := db.Update(context.Background(), func(tx *Tx) error {
		pruned, err = tx.PruneFinished(old.Add(-time.Hour), 5, 100)
		return err
	}); err != nil || pruned != 5 {
		t.Fatalf("PruneFinished(keep 5) of 10 deferred = %d, %v; want 5", pruned, err)
	}
	createFinal(t, db, finFlushN, time.Now())
	if n := indexed(t, db); n < finFlushN {
		t.Errorf("%d entries indexed after %d tasks, want a flush", n, finFlushN)
	}
	createFinal(t, db, 3, time.Now().Add(time.Second))
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	bdb.View(func(btx *bolt.Tx) error {
		if n, want := btx.Bucket(bucketFinished).Stats().KeyN, 5+finFlushN+3; n != want {
			t.Errorf("after Close: %d index entries, want %d", n, want)
		}
		return nil
	})
}

// Entries lost with the process (kill -9 before their flush) are
// recovered when the file is opened again.
func TestFinishedRecovered(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// On a loaded machine the 276 commits take more than finFlushAge: a
	// flush by age would index some of the 20 this test means to lose.
	db.fin.age = time.Hour
	createFinal(t, db, finFlushN+20, time.Now()) // one flush, then 20 waiting
	if n := indexed(t, db); n != finFlushN {
		t.Fatalf("%d entries indexed, want %d", n, finFlushN)
	}
	db.fin.keys = nil // what a crash loses
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if n := indexed(t, db); n != finFlushN+20 {
		t.Errorf("after reopening: %d entries indexed, want %d", n, finFlushN+20)
	}
}
