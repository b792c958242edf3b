package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func TestPushConfigs(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, store.Options{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t.Run("empty file", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			if _, err := tx.PushConfig("t1", "c1"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("PushConfig = %v, want ErrNotFound", err)
			}
			all, err := tx.PushConfigs("t1")
			if err != nil || len(all) != 0 {
				t.Errorf("PushConfigs = %v, %v", all, err)
			}
			return nil
		})
	})
	update(t, db, func(tx *store.Tx) error {
		for _, c := range []*store.PushConfig{
			{TaskID: "t1", ID: "b", URL: "http://127.0.0.1/b", CreatedAt: at},
			{TaskID: "t1", ID: "a", URL: "http://127.0.0.1/a", Token: "tok", CreatedAt: at},
			{TaskID: "t10", ID: "a", URL: "http://127.0.0.1/other", CreatedAt: at},
		} {
			if err := tx.PutPushConfig(c); err != nil {
				return err
			}
		}
		return nil
	})
	t.Run("list is per task, by id", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			all, err := tx.PushConfigs("t1")
			if err != nil {
				return err
			}
			if len(all) != 2 || all[0].ID != "a" || all[1].ID != "b" || all[0].Token != "tok" {
				t.Errorf("PushConfigs(t1) = %+v", all)
			}
			return nil
		})
	})
	t.Run("bad keys", func(t *testing.T) {
		err := db.Update(t.Context(), func(tx *store.Tx) error {
			return tx.PutPushConfig(&store.PushConfig{TaskID: "t\x00", ID: "x"})
		})
		if !errors.Is(err, store.ErrBadPushConfig) {
			t.Errorf("NUL in task id: %v, want ErrBadPushConfig", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		update(t, db, func(tx *store.Tx) error { return tx.DeletePushConfig("t1", "a") })
		err := db.Update(t.Context(), func(tx *store.Tx) error { return tx.DeletePushConfig("t1", "a") })
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v, want ErrNotFound", err)
		}
		view(t, db, func(tx *store.Tx) error {
			c, err := tx.PushConfig("t10", "a")
			if err != nil || c.URL != "http://127.0.0.1/other" {
				t.Errorf("t10's config = %+v, %v", c, err)
			}
			return nil
		})
	})
}

// A task's push configs go with the task when it is pruned, and
// PushTaskIDs names each task with configs once.
func TestPushConfigsPrunedWithTask(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	done := newTask(t, "echo", wire.StatusCompleted, base)
	live := newTask(t, "sleep", wire.StatusExecuting, base)
	update(t, db, func(tx *store.Tx) error {
		for _, task := range []*wire.Task{done, live} {
			if err := tx.CreateTask(task); err != nil {
				return err
			}
			for _, id := range []string{"a", "b"} {
				if err := tx.PutPushConfig(&store.PushConfig{TaskID: task.ID, ID: id, URL: "http://x/"}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	ids := func() []string {
		var out []string
		if err := db.View(func(tx *store.Tx) error {
			return tx.PushTaskIDs(func(id string) error { out = append(out, id); return nil })
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := ids(); len(got) != 2 {
		t.Fatalf("PushTaskIDs = %v, want both tasks once", got)
	}
	update(t, db, func(tx *store.Tx) error {
		_, err := tx.PruneFinished(base.Add(time.Hour), 0, 10)
		return err
	})
	if got := ids(); len(got) != 1 || got[0] != live.ID {
		t.Errorf("PushTaskIDs after pruning = %v, want only the live task %s", got, live.ID)
	}
}
