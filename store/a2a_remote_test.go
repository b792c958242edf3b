package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
)

func TestRemoteA2A(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, store.Options{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.RemoteA2A("t1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RemoteA2A on an empty file = %v, want ErrNotFound", err)
		}
		if all, err := tx.RemoteA2As(); err != nil || len(all) != 0 {
			t.Errorf("RemoteA2As on an empty file = %v, %v", all, err)
		}
		return nil
	})
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		return tx.PutRemoteA2A(&store.RemoteA2A{TaskID: "t1", Peer: "p"})
	})
	if !errors.Is(err, store.ErrBadRemoteA2A) {
		t.Errorf("a record without a remote id: %v, want ErrBadRemoteA2A", err)
	}
	update(t, db, func(tx *store.Tx) error {
		for _, r := range []*store.RemoteA2A{
			{TaskID: "t2", Peer: "p", URL: "a2a+http://127.0.0.1:1/a2a", RemoteID: "r2", CreatedAt: at},
			{TaskID: "t1", Peer: "p", URL: "a2a+http://127.0.0.1:1/a2a", RemoteID: "r1", CreatedAt: at},
			{TaskID: "t1", Peer: "p", URL: "a2a+http://127.0.0.1:1/a2a", RemoteID: "r1b", CreatedAt: at},
		} {
			if err := tx.PutRemoteA2A(r); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close(context.Background())
	db = openDB(t, path, store.Options{})
	view(t, db, func(tx *store.Tx) error {
		all, err := tx.RemoteA2As()
		if err != nil || len(all) != 2 || all[0].TaskID != "t1" || all[0].RemoteID != "r1b" || all[1].RemoteID != "r2" || !all[1].CreatedAt.Equal(at) {
			t.Errorf("after reopening: %+v, %v; want t1 (replaced: r1b) then t2", all, err)
		}
		return nil
	})
	update(t, db, func(tx *store.Tx) error {
		if err := tx.DeleteRemoteA2A("t1"); err != nil {
			return err
		}
		return tx.DeleteRemoteA2A("none")
	})
	view(t, db, func(tx *store.Tx) error {
		if r, err := tx.RemoteA2A("t2"); err != nil || r.RemoteID != "r2" {
			t.Errorf("RemoteA2A(t2) = %+v, %v", r, err)
		}
		if _, err := tx.RemoteA2A("t1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted t1: %v, want ErrNotFound", err)
		}
		return nil
	})
}
