package peerdb_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/peer/peerdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
)

func TestPeersAndSeen(t *testing.T) {

	db := storetest.Open(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := &peerdb.Peer{AgentID: "edge_b_1", Endpoint: "http://127.0.0.1:1", PublicKey: "k", Status: "online", LastSeen: now, AddedAt: now}
	storetest.View(t, db, func(tx *store.Tx) error {
		if _, err := peerdb.Get(tx, "edge_b_1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Peer before any: %v", err)
		}
		if peerdb.Seen(tx, "m1") {
			t.Error("seen before any")
		}
		return nil
	})
	storetest.Update(t, db, func(tx *store.Tx) error {
		if err := peerdb.Put(tx, p); err != nil {
			return err
		}
		if err := peerdb.MarkSeen(tx, "old", now.Add(-8*24*time.Hour)); err != nil {
			return err
		}
		return peerdb.MarkSeen(tx, "new", now)
	})
	storetest.View(t, db, func(tx *store.Tx) error {
		got, err := peerdb.Get(tx, "edge_b_1")
		if err != nil || got.Endpoint != p.Endpoint || !got.LastSeen.Equal(now) {
			t.Errorf("Peer = %+v, %v", got, err)
		}
		list, err := peerdb.List(tx)
		if err != nil || len(list) != 1 {
			t.Errorf("Peers = %v, %v", list, err)
		}
		if !peerdb.Seen(tx, "old") || !peerdb.Seen(tx, "new") {
			t.Error("marked ids not seen")
		}
		return nil
	})
	var n int
	storetest.Update(t, db, func(tx *store.Tx) error {
		var err error
		n, err = peerdb.PruneSeen(tx, now.Add(-7*24*time.Hour), 100)
		return err
	})
	storetest.View(t, db, func(tx *store.Tx) error {
		if n != 1 || peerdb.Seen(tx, "old") || !peerdb.Seen(tx, "new") {
			t.Errorf("pruned %d; old seen %v, new seen %v; want only old forgotten", n, peerdb.Seen(tx, "old"), peerdb.Seen(tx, "new"))
		}
		return nil
	})
	storetest.Update(t, db, func(tx *store.Tx) error { return peerdb.Delete(tx, "edge_b_1") })
	if err := db.Update(t.Context(), func(tx *store.Tx) error { return peerdb.Delete(tx, "edge_b_1") }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// TestLayout: the records are where and as the store kept them before
// they left it (the file of an older agent reads the same).
func TestLayout(t *testing.T) {
	db := storetest.Open(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	storetest.Update(t, db, func(tx *store.Tx) error {
		if err := peerdb.Put(tx, &peerdb.Peer{AgentID: "p1", Endpoint: "http://127.0.0.1:1", PublicKey: "k", Status: "online", LastSeen: at, AddedAt: at}); err != nil {
			return err
		}
		return peerdb.MarkSeen(tx, "m1", at)
	})
	oldPeer := `{"agent_id":"p1","endpoint":"http://127.0.0.1:1","public_key":"k","status":"online","last_seen":"2030-01-02T03:04:05Z","added_at":"2030-01-02T03:04:05Z"}`
	ts := binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano()))
	storetest.View(t, db, func(tx *store.Tx) error {
		for _, c := range []struct{ bucket, key, want string }{
			{"peers", "p1", oldPeer},
			{"p2p_seen", "m1", string(ts)},
			{"p2p_seen_at", string(ts) + "m1", ""},
		} {
			v, err := store.RawRecords(c.bucket).Get(tx, []byte(c.key))
			if err != nil || string(*v) != c.want {
				t.Errorf("%s %q = %q, %v; want %q", c.bucket, c.key, v, err, c.want)
			}
		}
		return nil
	})
}
