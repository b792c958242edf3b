package contractdb_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/contracts/contractdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
)

func contractRecord(t *testing.T, peer string, created time.Time, ttl time.Duration) *contractdb.Record {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return &contractdb.Record{ID: id.String(), Peer: peer, Role: "requester",
		Contract:  []byte(fmt.Sprintf(`{"contract_id":%q,"security_level":"high"}`, id)),
		CreatedAt: created, ExpiresAt: created.Add(ttl)}
}

func contractIDs(rs []*contractdb.Record) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestContracts(t *testing.T) {
	db := storetest.Open(t)
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	storetest.View(t, db, func(tx *store.Tx) error {
		if _, err := contractdb.Get(tx, "x"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Contract on an empty file: %v, want ErrNotFound", err)
		}
		if list, err := contractdb.OfPeer(tx, "p", 0); err != nil || len(list) != 0 {
			t.Errorf("PeerContracts on an empty file = %v, %v", list, err)
		}
		return nil
	})
	a1 := contractRecord(t, "peer-a", t0, time.Hour)
	a2 := contractRecord(t, "peer-a", t0.Add(time.Minute), time.Hour)
	b1 := contractRecord(t, "peer-ab", t0.Add(2*time.Minute), time.Hour) // shares a prefix with peer-a
	storetest.Update(t, db, func(tx *store.Tx) error {
		for _, r := range []*contractdb.Record{a1, a2, b1} {
			if err := contractdb.Put(tx, r); err != nil {
				return err
			}
		}
		return nil
	})

	t.Run("frozen", func(t *testing.T) {
		again := *a1
		again.Contract = []byte(`{"security_level":"basic"}`)
		err := db.Update(context.Background(), func(tx *store.Tx) error { return contractdb.Put(tx, &again) })
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("PutContract of an existing id: %v, want ErrExists", err)
		}
		storetest.View(t, db, func(tx *store.Tx) error {
			got, err := contractdb.Get(tx, a1.ID)
			if err != nil || string(got.Contract) != string(a1.Contract) {
				t.Errorf("Contract = %s, %v; want the first terms byte for byte", got.Contract, err)
			}
			return nil
		})
	})
	t.Run("bad records", func(t *testing.T) {
		for name, r := range map[string]*contractdb.Record{
			"no peer":  {ID: "x", Contract: []byte(`{}`)},
			"NUL id":   {ID: "x\x00y", Peer: "p", Contract: []byte(`{}`)},
			"not JSON": {ID: "y", Peer: "p", Contract: []byte(`{`)},
		} {
			if err := db.Update(context.Background(), func(tx *store.Tx) error { return contractdb.Put(tx, r) }); err == nil {
				t.Errorf("%s: PutContract accepted %+v", name, r)
			}
		}
	})
	t.Run("per peer newest first", func(t *testing.T) {
		storetest.View(t, db, func(tx *store.Tx) error {
			got, err := contractdb.OfPeer(tx, "peer-a", 0)
			if want := []string{a2.ID, a1.ID}; err != nil || !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts(peer-a) = %v, %v; want %v", contractIDs(got), err, want)
			}
			got, _ = contractdb.OfPeer(tx, "peer-a", 1)
			if want := []string{a2.ID}; !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts(peer-a, 1) = %v, want %v", contractIDs(got), want)
			}
			got, _ = contractdb.OfPeer(tx, "peer-ab", 0)
			if want := []string{b1.ID}; !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts(peer-ab) = %v, want %v", contractIDs(got), want)
			}
			return nil
		})
	})
	t.Run("list pages", func(t *testing.T) {
		var all []string
		after := ""
		for range 10 {
			var page []*contractdb.Record
			var next string
			storetest.View(t, db, func(tx *store.Tx) error {
				var err error
				page, next, err = contractdb.List(tx, after, 2)
				return err
			})
			all = append(all, contractIDs(page)...)
			if next == "" {
				break
			}
			after = next
		}
		want := contractIDs([]*contractdb.Record{a1, a2, b1})
		slices.Sort(want)
		if !slices.Equal(all, want) {
			t.Errorf("pages = %v, want %v", all, want)
		}
	})
	t.Run("revoke once", func(t *testing.T) {
		storetest.Update(t, db, func(tx *store.Tx) error {
			r, err := contractdb.Revoke(tx, a1.ID, t0.Add(time.Second), "local")
			if err != nil || !r.Revoked() || r.RevokedBy != "local" {
				t.Errorf("RevokeContract = %+v, %v", r, err)
			}
			r, err = contractdb.Revoke(tx, a1.ID, t0.Add(time.Hour), "peer-a")
			if err != nil || !r.RevokedAt.Equal(t0.Add(time.Second)) || r.RevokedBy != "local" {
				t.Errorf("second RevokeContract = %+v, %v; want the first revocation kept", r, err)
			}
			if _, err := contractdb.Revoke(tx, "nope", t0, "local"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("RevokeContract(nope) = %v, want ErrNotFound", err)
			}
			return nil
		})
		storetest.View(t, db, func(tx *store.Tx) error {
			r, _ := contractdb.Get(tx, a1.ID)
			if !r.Revoked() || string(r.Contract) != string(a1.Contract) {
				t.Errorf("after revocation: %+v; want revoked with the terms unchanged", r)
			}
			return nil
		})
	})
	t.Run("prune", func(t *testing.T) {
		var n int
		storetest.Update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = contractdb.Prune(tx, t0.Add(time.Hour+30*time.Second), 10)
			return err
		})
		if n != 1 {
			t.Fatalf("pruned %d, want only the one expired before the cutoff", n)
		}
		storetest.View(t, db, func(tx *store.Tx) error {
			if _, err := contractdb.Get(tx, a1.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("pruned contract still there: %v", err)
			}
			got, _ := contractdb.OfPeer(tx, "peer-a", 0)
			if want := []string{a2.ID}; !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts after prune = %v, want %v", contractIDs(got), want)
			}
			return nil
		})
		storetest.Update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = contractdb.Prune(tx, t0.Add(24*time.Hour), 1)
			return err
		})
		if n != 1 {
			t.Errorf("pruned %d with limit 1, want 1", n)
		}
	})
}

// TestLayout: the records are where and as the store kept them before
// they left it (the file of an older agent reads the same).
func TestLayout(t *testing.T) {
	db := storetest.Open(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	storetest.Update(t, db, func(tx *store.Tx) error {
		return contractdb.Put(tx, &contractdb.Record{ID: "c1", Peer: "p1", Role: "requester",
			Contract: json.RawMessage(`{ "a" : 1 }`), ExpiresAt: at, CreatedAt: at})
	})
	oldRec := `{"id":"c1","peer":"p1","role":"requester","contract":{"a":1},"expires_at":"2030-01-02T03:04:05Z","created_at":"2030-01-02T03:04:05Z"}`
	idx := append(binary.BigEndian.AppendUint64([]byte("p1\x00"), uint64(at.UnixNano())), "c1"...)
	storetest.View(t, db, func(tx *store.Tx) error {
		if v, err := store.RawRecords("contracts").Get(tx, []byte("c1")); err != nil || string(*v) != oldRec {
			t.Errorf("contracts/c1 = %q, %v; want %s", v, err, oldRec)
		}
		if v, err := store.RawRecords("contracts_peer").Get(tx, idx); err != nil || len(*v) != 0 {
			t.Errorf("contracts_peer entry = %q, %v; want empty", v, err)
		}
		return nil
	})
}
