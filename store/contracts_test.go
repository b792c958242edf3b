package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/store"
)

func contractRecord(t *testing.T, peer string, created time.Time, ttl time.Duration) *store.ContractRecord {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return &store.ContractRecord{ID: id.String(), Peer: peer, Role: "requester",
		Contract:  []byte(fmt.Sprintf(`{"contract_id":%q,"security_level":"high"}`, id)),
		CreatedAt: created, ExpiresAt: created.Add(ttl)}
}

func contractIDs(rs []*store.ContractRecord) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func TestContracts(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.Contract("x"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Contract on an empty file: %v, want ErrNotFound", err)
		}
		if list, err := tx.PeerContracts("p", 0); err != nil || len(list) != 0 {
			t.Errorf("PeerContracts on an empty file = %v, %v", list, err)
		}
		return nil
	})
	a1 := contractRecord(t, "peer-a", t0, time.Hour)
	a2 := contractRecord(t, "peer-a", t0.Add(time.Minute), time.Hour)
	b1 := contractRecord(t, "peer-ab", t0.Add(2*time.Minute), time.Hour) // shares a prefix with peer-a
	update(t, db, func(tx *store.Tx) error {
		for _, r := range []*store.ContractRecord{a1, a2, b1} {
			if err := tx.PutContract(r); err != nil {
				return err
			}
		}
		return nil
	})

	t.Run("frozen", func(t *testing.T) {
		again := *a1
		again.Contract = []byte(`{"security_level":"basic"}`)
		err := db.Update(context.Background(), func(tx *store.Tx) error { return tx.PutContract(&again) })
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("PutContract of an existing id: %v, want ErrExists", err)
		}
		view(t, db, func(tx *store.Tx) error {
			got, err := tx.Contract(a1.ID)
			if err != nil || string(got.Contract) != string(a1.Contract) {
				t.Errorf("Contract = %s, %v; want the first terms byte for byte", got.Contract, err)
			}
			return nil
		})
	})
	t.Run("bad records", func(t *testing.T) {
		for name, r := range map[string]*store.ContractRecord{
			"no peer":  {ID: "x", Contract: []byte(`{}`)},
			"NUL id":   {ID: "x\x00y", Peer: "p", Contract: []byte(`{}`)},
			"not JSON": {ID: "y", Peer: "p", Contract: []byte(`{`)},
		} {
			if err := db.Update(context.Background(), func(tx *store.Tx) error { return tx.PutContract(r) }); err == nil {
				t.Errorf("%s: PutContract accepted %+v", name, r)
			}
		}
	})
	t.Run("per peer newest first", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			got, err := tx.PeerContracts("peer-a", 0)
			if want := []string{a2.ID, a1.ID}; err != nil || !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts(peer-a) = %v, %v; want %v", contractIDs(got), err, want)
			}
			got, _ = tx.PeerContracts("peer-a", 1)
			if want := []string{a2.ID}; !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts(peer-a, 1) = %v, want %v", contractIDs(got), want)
			}
			got, _ = tx.PeerContracts("peer-ab", 0)
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
			var page []*store.ContractRecord
			var next string
			view(t, db, func(tx *store.Tx) error {
				var err error
				page, next, err = tx.Contracts(after, 2)
				return err
			})
			all = append(all, contractIDs(page)...)
			if next == "" {
				break
			}
			after = next
		}
		want := contractIDs([]*store.ContractRecord{a1, a2, b1})
		slices.Sort(want)
		if !slices.Equal(all, want) {
			t.Errorf("pages = %v, want %v", all, want)
		}
	})
	t.Run("revoke once", func(t *testing.T) {
		update(t, db, func(tx *store.Tx) error {
			r, err := tx.RevokeContract(a1.ID, t0.Add(time.Second), "local")
			if err != nil || !r.Revoked() || r.RevokedBy != "local" {
				t.Errorf("RevokeContract = %+v, %v", r, err)
			}
			r, err = tx.RevokeContract(a1.ID, t0.Add(time.Hour), "peer-a")
			if err != nil || !r.RevokedAt.Equal(t0.Add(time.Second)) || r.RevokedBy != "local" {
				t.Errorf("second RevokeContract = %+v, %v; want the first revocation kept", r, err)
			}
			if _, err := tx.RevokeContract("nope", t0, "local"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("RevokeContract(nope) = %v, want ErrNotFound", err)
			}
			return nil
		})
		view(t, db, func(tx *store.Tx) error {
			r, _ := tx.Contract(a1.ID)
			if !r.Revoked() || string(r.Contract) != string(a1.Contract) {
				t.Errorf("after revocation: %+v; want revoked with the terms unchanged", r)
			}
			return nil
		})
	})
	t.Run("prune", func(t *testing.T) {
		var n int
		update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = tx.PruneContracts(t0.Add(time.Hour+30*time.Second), 10)
			return err
		})
		if n != 1 {
			t.Fatalf("pruned %d, want only the one expired before the cutoff", n)
		}
		view(t, db, func(tx *store.Tx) error {
			if _, err := tx.Contract(a1.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("pruned contract still there: %v", err)
			}
			got, _ := tx.PeerContracts("peer-a", 0)
			if want := []string{a2.ID}; !slices.Equal(contractIDs(got), want) {
				t.Errorf("PeerContracts after prune = %v, want %v", contractIDs(got), want)
			}
			return nil
		})
		update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = tx.PruneContracts(t0.Add(24*time.Hour), 1)
			return err
		})
		if n != 1 {
			t.Errorf("pruned %d with limit 1, want 1", n)
		}
	})
}
