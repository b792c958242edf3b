package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
)

func TestPeersAndSeen(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, store.Options{})
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := &store.Peer{AgentID: "edge_b_1", Endpoint: "http://127.0.0.1:1", PublicKey: "k", Status: "online", LastSeen: now, AddedAt: now}
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.Peer("edge_b_1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Peer before any: %v", err)
		}
		if tx.SeenMessage("m1") {
			t.Error("seen before any")
		}
		return nil
	})
	update(t, db, func(tx *store.Tx) error {
		if err := tx.PutPeer(p); err != nil {
			return err
		}
		if err := tx.MarkSeen("old", now.Add(-8*24*time.Hour)); err != nil {
			return err
		}
		return tx.MarkSeen("new", now)
	})
	view(t, db, func(tx *store.Tx) error {
		got, err := tx.Peer("edge_b_1")
		if err != nil || got.Endpoint != p.Endpoint || !got.LastSeen.Equal(now) {
			t.Errorf("Peer = %+v, %v", got, err)
		}
		list, err := tx.Peers()
		if err != nil || len(list) != 1 {
			t.Errorf("Peers = %v, %v", list, err)
		}
		if !tx.SeenMessage("old") || !tx.SeenMessage("new") {
			t.Error("marked ids not seen")
		}
		return nil
	})
	var n int
	update(t, db, func(tx *store.Tx) error {
		var err error
		n, err = tx.PruneSeen(now.Add(-7*24*time.Hour), 100)
		return err
	})
	view(t, db, func(tx *store.Tx) error {
		if n != 1 || tx.SeenMessage("old") || !tx.SeenMessage("new") {
			t.Errorf("pruned %d; old seen %v, new seen %v; want only old forgotten", n, tx.SeenMessage("old"), tx.SeenMessage("new"))
		}
		return nil
	})
	update(t, db, func(tx *store.Tx) error { return tx.DeletePeer("edge_b_1") })
	if err := db.Update(t.Context(), func(tx *store.Tx) error { return tx.DeletePeer("edge_b_1") }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}
