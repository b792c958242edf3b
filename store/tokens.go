package store

import (
	"fmt"
	"time"
)

// Token is a stored API token. Only the SHA-256 of its secret is kept.
type Token struct {
	ID        string    `json:"token_id"`
	Name      string    `json:"name"`
	Scopes    []string  `json:"scopes"`
	Hash      []byte    `json:"hash"`
	CreatedAt time.Time `json:"created_at"`
}

// PutToken writes a new token.
func (tx *Tx) PutToken(t *Token) error {
	if tx.b(bucketTokens).Get([]byte(t.ID)) != nil {
		return fmt.Errorf("token %s: %w", t.ID, ErrExists)
	}
	if err := putJSON(tx.b(bucketTokens), []byte(t.ID), t); err != nil {
		return err
	}
	return tx.b(bucketTokenHash).Put(t.Hash, []byte(t.ID))
}

// TokenByHash finds the token whose secret hashes to h.
func (tx *Tx) TokenByHash(h []byte) (*Token, error) {
	id := tx.b(bucketTokenHash).Get(h)
	if id == nil {
		return nil, ErrNotFound
	}
	t := new(Token)
	if err := getJSON(tx.b(bucketTokens), id, t); err != nil {
		return nil, err
	}
	return t, nil
}

// Tokens lists every token.
func (tx *Tx) Tokens() ([]*Token, error) {
	var out []*Token
	err := tx.b(bucketTokens).ForEach(func(k, v []byte) error {
		t := new(Token)
		if err := getJSON(tx.b(bucketTokens), k, t); err != nil {
			return err
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

// DeleteToken removes a token; ErrNotFound if there is none.
func (tx *Tx) DeleteToken(id string) error {
	t := new(Token)
	if err := getJSON(tx.b(bucketTokens), []byte(id), t); err != nil {
		return err
	}
	if err := tx.b(bucketTokenHash).Delete(t.Hash); err != nil {
		return err
	}
	return tx.b(bucketTokens).Delete([]byte(id))
}
