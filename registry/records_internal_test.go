package registry

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func TestRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

	t.Run("empty file", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			if _, err := getRecord(tx, "nobody"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("RegistryEntry on an empty file: %v, want ErrNotFound", err)
			}
			if n := countRecords(tx); n != 0 {
				t.Errorf("countRecords = %d; want 0", n)
			}
			calls := 0
			if err := forEachRecord(tx, func(*record) error { calls++; return nil }); err != nil || calls != 0 {
				t.Errorf("forEachRecord: %d calls, %v", calls, err)
			}
			return nil
		})
	})

	caps := wire.DefaultAgentCapabilities()
	caps.SupportedTaskTypes = []wire.SupportedTaskType{{Type: "echo", Name: "Echo", Capabilities: []string{"diagnostics"}}}
	for _, id := range []string{"b_agent", "a_agent"} {
		e := &record{AgentID: id, Endpoint: "http://127.0.0.1:1", PublicKey: "key-" + id,
			Capabilities: *caps, Interfaces: wire.StandardInterfaces[:3], Status: "online",
			HeartbeatIntervalSeconds: 30, RegisteredAt: at, LastSeen: at, SignedAt: at}
		update(t, db, func(tx *store.Tx) error { return putRecord(tx, e) })
	}

	t.Run("bad keys", func(t *testing.T) {
		for _, id := range []string{"", "a\x00b"} {
			err := db.Update(context.Background(), func(tx *store.Tx) error {
				return putRecord(tx, &record{AgentID: id})
			})
			if !errors.Is(err, errBadKey) {
				t.Errorf("putRecord(%q) = %v, want errBadKey", id, err)
			}
		}
	})

	// Entries survive a reopen, in agent_id order, with what was declared.
	if err := db.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	db, err = store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	t.Run("after reopen", func(t *testing.T) {
		var ids []string
		view(t, db, func(tx *store.Tx) error {
			return forEachRecord(tx, func(e *record) error {
				ids = append(ids, e.AgentID)
				return nil
			})
		})
		if got, want := len(ids), 2; got != want || ids[0] != "a_agent" || ids[1] != "b_agent" {
			t.Fatalf("entries = %v, want [a_agent b_agent]", ids)
		}
		view(t, db, func(tx *store.Tx) error {
			e, err := getRecord(tx, "b_agent")
			if err != nil {
				t.Fatalf("RegistryEntry: %v", err)
			}
			if got, want := e.PublicKey, "key-b_agent"; got != want {
				t.Errorf("public_key = %q, want %q", got, want)
			}
			if !e.LastSeen.Equal(at) || len(e.Interfaces) != 3 || e.Capabilities.SupportedTaskTypes[0].Capabilities[0] != "diagnostics" {
				t.Errorf("entry read back as %+v", e)
			}
			if n := countRecords(tx); n != 2 {
				t.Errorf("countRecords = %d; want 2", n)
			}
			return nil
		})
	})

	t.Run("delete", func(t *testing.T) {
		update(t, db, func(tx *store.Tx) error { return deleteRecord(tx, "a_agent") })
		err := db.Update(context.Background(), func(tx *store.Tx) error { return deleteRecord(tx, "a_agent") })
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v, want ErrNotFound", err)
		}
		view(t, db, func(tx *store.Tx) error {
			if _, err := getRecord(tx, "a_agent"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("deleted entry read: %v", err)
			}
			return nil
		})
	})

	t.Run("stop early", func(t *testing.T) {
		stop := errors.New("stop")
		calls := 0
		var err error
		view(t, db, func(tx *store.Tx) error {
			err = forEachRecord(tx, func(*record) error { calls++; return stop })
			return nil
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("forEachRecord returned %v after %d calls, want stop after 1", err, calls)
		}
	})
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
