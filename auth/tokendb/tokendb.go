// Package tokendb keeps the API tokens in the store, through
// store.Records: only the SHA-256 of a token's secret is kept, under the
// keys the store used before the records left it (the layout is
// unchanged, byte for byte):
//
//	tokens      token_id → Token JSON
//	token_hash  sha256(token) → token_id
//
// Package auth owns their meaning.
package tokendb

import (
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
)

var (
	tokens = store.JSONRecords[Token]("tokens")
	byHash = store.RawRecords("token_hash")
)

// Token is a stored API token. Only the SHA-256 of its secret is kept.
type Token struct {
	ID        string    `json:"token_id"`
	Name      string    `json:"name"`
	Scopes    []string  `json:"scopes"`
	Hash      []byte    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
}

// Put writes a new token; store.ErrExists when its id is taken.
func Put(tx *store.Tx, t *Token) error {
	if tokens.Has(tx, []byte(t.ID)) {
		return fmt.Errorf("token %s: %w", t.ID, store.ErrExists)
	}
	if err := tokens.Put(tx, []byte(t.ID), t); err != nil {
		return err
	}
	id := []byte(t.ID)
	return byHash.Put(tx, t.Hash, &id)
}

// ByHash finds the token whose secret hashes to h.
func ByHash(tx *store.Tx, h []byte) (*Token, error) {
	id, err := byHash.Get(tx, h)
	if err != nil {
		return nil, err
	}
	return tokens.Get(tx, *id)
}

// List lists every token, by id.
func List(tx *store.Tx) ([]*Token, error) {
	var out []*Token
	err := tokens.Scan(tx, nil, func(_ []byte, t *Token) error {
		c := *t
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes a token; store.ErrNotFound if there is none.
func Delete(tx *store.Tx, id string) error {
	t, err := tokens.Get(tx, []byte(id))
	if err != nil {
		return err
	}
	if err := byHash.Delete(tx, t.Hash); err != nil {
		return err
	}
	return tokens.Delete(tx, []byte(id))
}
