package tokendb_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth/tokendb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
)

func TestTokens(t *testing.T) {
	db := storetest.Open(t)
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := &tokendb.Token{ID: "tok_1", Name: "ci", Scopes: []string{"tasks:read"}, Hash: []byte("hash-one-000000000000000000000000"), CreatedAt: at}
	t2 := &tokendb.Token{ID: "tok_2", Name: "ops", Scopes: []string{"admin"}, Hash: []byte("hash-two-000000000000000000000000"), CreatedAt: at}
	storetest.Update(t, db, func(tx *store.Tx) error {
		if err := tokendb.Put(tx, t1); err != nil {
			return err
		}
		return tokendb.Put(tx, t2)
	})
	byHash := func(h []byte) (*tokendb.Token, error) {
		var tok *tokendb.Token
		err := db.View(func(tx *store.Tx) error {
			var err error
			tok, err = tokendb.ByHash(tx, h)
			return err
		})
		return tok, err
	}
	list := func() []string {
		var ids []string
		storetest.View(t, db, func(tx *store.Tx) error {
			ts, err := tokendb.List(tx)
			for _, tok := range ts {
				ids = append(ids, tok.ID)
			}
			return err
		})
		return ids
	}

	got, err := byHash(t1.Hash)
	if err != nil {
		t.Fatalf("TokenByHash: %v", err)
	}
	if got.ID != t1.ID || got.Name != t1.Name || !slices.Equal(got.Scopes, t1.Scopes) || !got.CreatedAt.Equal(at) {
		t.Errorf("TokenByHash = %+v, want %+v", got, t1)
	}
	if _, err := byHash([]byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TokenByHash(unknown) = %v, want ErrNotFound", err)
	}
	if got, want := list(), []string{"tok_1", "tok_2"}; !slices.Equal(got, want) {
		t.Errorf("Tokens = %v, want %v", got, want)
	}
	dup := *t1
	dup.Hash = []byte("other")
	if err := db.Update(t.Context(), func(tx *store.Tx) error { return tokendb.Put(tx, &dup) }); !errors.Is(err, store.ErrExists) {
		t.Errorf("PutToken of an existing id = %v, want ErrExists", err)
	}
	if _, err := byHash(dup.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused duplicate's hash resolves: %v", err)
	}

	storetest.Update(t, db, func(tx *store.Tx) error { return tokendb.Delete(tx, "tok_1") })
	if _, err := byHash(t1.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TokenByHash after DeleteToken = %v, want ErrNotFound", err)
	}
	if got, want := list(), []string{"tok_2"}; !slices.Equal(got, want) {
		t.Errorf("Tokens after delete = %v, want %v", got, want)
	}
	if err := db.Update(t.Context(), func(tx *store.Tx) error { return tokendb.Delete(tx, "tok_1") }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second DeleteToken = %v, want ErrNotFound", err)
	}
}

// TestLayout: the records are where and as the store kept them before
// they left it (the file of an older agent reads the same).
func TestLayout(t *testing.T) {
	db := storetest.Open(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	storetest.Update(t, db, func(tx *store.Tx) error {
		return tokendb.Put(tx, &tokendb.Token{ID: "tok_1", Name: "ci", Scopes: []string{"admin"}, Hash: []byte{1, 2, 3}, CreatedAt: at})
	})
	old := `{"token_id":"tok_1","name":"ci","scopes":["admin"],"hash":"AQID","created_at":"2030-01-02T03:04:05Z"}`
	storetest.View(t, db, func(tx *store.Tx) error {
		if v, err := store.RawRecords("tokens").Get(tx, []byte("tok_1")); err != nil || string(*v) != old {
			t.Errorf("tokens/tok_1 = %q, %v; want %s", v, err, old)
		}
		if v, err := store.RawRecords("token_hash").Get(tx, []byte{1, 2, 3}); err != nil || string(*v) != "tok_1" {
			t.Errorf("token_hash entry = %q, %v; want tok_1", v, err)
		}
		return nil
	})
}
