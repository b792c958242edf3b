package a2a_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
	"github.com/synapse-edge/synapse/wire"
)

// TestLedger: the remote tasks are kept through a restart, replaced by
// task id, listed in task id order and deleted; a record without its ids
// is refused; local tasks are read as they are.
func TestLedger(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := a2a.NewLedger(db)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if r, err := l.RemoteTask("t1"); r != nil || err != nil {
		t.Errorf("RemoteTask on an empty file = %v, %v; want nil, nil", r, err)
	}
	if all, err := l.RemoteTasks(); err != nil || len(all) != 0 {
		t.Errorf("RemoteTasks on an empty file = %v, %v", all, err)
	}
	if err := l.PutRemoteTask(ctx, &a2a.RemoteTask{TaskID: "t1", Peer: "p"}); !errors.Is(err, a2a.ErrBadRemoteTask) {
		t.Errorf("a record without a remote id: %v, want ErrBadRemoteTask", err)
	}
	for _, r := range []*a2a.RemoteTask{
		{TaskID: "t2", Peer: "p", URL: "a2a+http://127.0.0.1:1/a2a", RemoteID: "r2", CreatedAt: at},
		{TaskID: "t1", Peer: "p", URL: "a2a+http://127.0.0.1:1/a2a", RemoteID: "r1", CreatedAt: at},
		{TaskID: "t1", Peer: "p", URL: "a2a+http://127.0.0.1:1/a2a", RemoteID: "r1b", CreatedAt: at},
	} {
		if err := l.PutRemoteTask(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db = storetest.OpenPath(t, path)
	l = a2a.NewLedger(db)
	all, err := l.RemoteTasks()
	if err != nil || len(all) != 2 || all[0].TaskID != "t1" || all[0].RemoteID != "r1b" || all[1].RemoteID != "r2" || !all[1].CreatedAt.Equal(at) {
		t.Errorf("after reopening: %+v, %v; want t1 (replaced: r1b) then t2", all, err)
	}
	if err := l.DeleteRemoteTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteRemoteTask(ctx, "none"); err != nil {
		t.Fatal(err)
	}
	if r, err := l.RemoteTask("t2"); err != nil || r == nil || r.RemoteID != "r2" {
		t.Errorf("RemoteTask(t2) = %+v, %v", r, err)
	}
	if r, err := l.RemoteTask("t1"); r != nil || err != nil {
		t.Errorf("deleted t1: %+v, %v; want nil, nil", r, err)
	}

	if task, err := l.LocalTask("t9"); task != nil || err != nil {
		t.Errorf("LocalTask of no task = %+v, %v; want nil, nil", task, err)
	}
	storetest.Update(t, db, func(tx *store.Tx) error {
		return tx.PutTask(&wire.Task{ID: "t9", Type: "echo", Status: wire.StatusPending, Target: "p", CreatedAt: at, UpdatedAt: at})
	})
	if task, err := l.LocalTask("t9"); err != nil || task == nil || task.Target != "p" {
		t.Errorf("LocalTask(t9) = %+v, %v", task, err)
	}
}

// TestLedgerReadsOldRecords: a record the store wrote before the remote
// tasks were A2A's (bucket a2a_remote, the same JSON) reads back.
func TestLedgerReadsOldRecords(t *testing.T) {
	db := storetest.Open(t)
	raw := store.RawRecords("a2a_remote")
	old := []byte(`{"task_id":"t1","peer":"p","url":"a2a+http://127.0.0.1:1/a2a","remote_id":"r1","created_at":"2026-01-02T03:04:05Z"}`)
	storetest.Update(t, db, func(tx *store.Tx) error { return raw.Put(tx, []byte("t1"), &old) })
	r, err := a2a.NewLedger(db).RemoteTask("t1")
	if err != nil || r == nil || r.RemoteID != "r1" || r.Peer != "p" || r.CreatedAt.Year() != 2026 {
		t.Fatalf("RemoteTask(t1) = %+v, %v", r, err)
	}
}
