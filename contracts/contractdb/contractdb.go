// Package contractdb keeps protocol contracts (seed 002 §8.3, SPEC §7) in
// the store, through store.Records: both agents of a negotiation keep
// one, under the keys the store used before the records left it (the
// layout is unchanged, byte for byte):
//
//	contracts       contract_id → Record JSON
//	contracts_peer  peer 0x00 created_at(unix ns, uint64 BE) contract_id → empty
//
// A contract's terms are written once, as the exact JSON that was made or
// received, and never rewritten: Put refuses an id that exists.
// Revocation is recorded next to the terms, once. The buckets are created
// by the first write that needs them. Package contracts owns their
// meaning.
package contractdb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
)

var (
	contracts = store.JSONRecords[Record]("contracts")
	byPeer    = store.RawRecords("contracts_peer")
)

// ErrBadKey: a contract without an id or peer, or with a NUL byte in one.
var ErrBadKey = errors.New("contract record needs an id and a peer without NUL bytes")

// Record is one party's copy of a contract.
type Record struct {
	ID string `json:"id"`
	// Peer is the other agent of the contract.
	Peer string `json:"peer"`
	// Role is this agent's side: "requester" or "responder".
	Role string `json:"role"`
	// Contract is the ProtocolContract as JSON (stored compacted), frozen.
	Contract  json.RawMessage `json:"contract"`
	ExpiresAt time.Time       `json:"expires_at"`
	CreatedAt time.Time       `json:"created_at"`
	// RevokedAt is set once, when either side revoked it; RevokedBy is
	// "local" or the peer's agent_id.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	RevokedBy string    `json:"revoked_by,omitempty"`
}

// Revoked reports whether the contract was revoked.
func (r *Record) Revoked() bool { return !r.RevokedAt.IsZero() }

func peerKey(peer string, created time.Time, id string) []byte {
	k := make([]byte, 0, len(peer)+1+8+len(id))
	k = append(k, peer...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(created.UnixNano()))
	return append(k, id...)
}

// Put stores a new contract; store.ErrExists if its id is taken (terms
// never change).
func Put(tx *store.Tx, r *Record) error {
	if r.ID == "" || r.Peer == "" || bytes.IndexByte([]byte(r.ID+r.Peer), 0) >= 0 {
		return ErrBadKey
	}
	if !json.Valid(r.Contract) {
		return fmt.Errorf("contract %s: terms are not JSON", r.ID)
	}
	if contracts.Has(tx, []byte(r.ID)) {
		return fmt.Errorf("contract %s: %w", r.ID, store.ErrExists)
	}
	var empty []byte
	if err := byPeer.Put(tx, peerKey(r.Peer, r.CreatedAt, r.ID), &empty); err != nil {
		return err
	}
	return contracts.Put(tx, []byte(r.ID), r)
}

// Get reads one contract; store.ErrNotFound if there is none.
func Get(tx *store.Tx, id string) (*Record, error) {
	return contracts.Get(tx, []byte(id))
}

// Revoke records that a contract was revoked at `at` by `by`. A contract
// revoked before keeps its first revocation; the record is returned
// either way.
func Revoke(tx *store.Tx, id string, at time.Time, by string) (*Record, error) {
	r, err := Get(tx, id)
	if err != nil {
		return nil, err
	}
	if r.Revoked() {
		return r, nil
	}
	r.RevokedAt, r.RevokedBy = at.UTC(), by
	return r, contracts.Put(tx, []byte(id), r)
}

// OfPeer lists a peer's contracts, newest first, at most limit (limit <=
// 0: all).
func OfPeer(tx *store.Tx, peer string, limit int) ([]*Record, error) {
	prefix := append([]byte(peer), 0)
	end := append([]byte(peer), 1)
	var ids []string
	err := byPeer.ScanBack(tx, end, func(k []byte, _ *[]byte) error {
		if bytes.Equal(k, end) {
			return nil
		}
		if !bytes.HasPrefix(k, prefix) || (limit > 0 && len(ids) == limit) {
			return store.ErrStop
		}
		if len(k) >= len(prefix)+8 {
			ids = append(ids, string(k[len(prefix)+8:]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, id := range ids {
		r, err := Get(tx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // pruned
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// List lists contracts in id order (UUID v7: creation order) after the
// id `after`, at most limit, and the id to continue after ("" when there
// are no more).
func List(tx *store.Tx, after string, limit int) ([]*Record, string, error) {
	var from []byte
	if after != "" {
		from = []byte(after)
	}
	var out []*Record
	next := ""
	err := contracts.Scan(tx, from, func(k []byte, r *Record) error {
		if after != "" && string(k) == after {
			return nil
		}
		if len(out) == limit {
			next = out[len(out)-1].ID
			return store.ErrStop
		}
		c := *r
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// Prune deletes up to limit contracts that expired before `before`, and
// reports how many it deleted.
func Prune(tx *store.Tx, before time.Time, limit int) (int, error) {
	var drop []*Record
	err := contracts.Scan(tx, nil, func(_ []byte, r *Record) error {
		if len(drop) == limit {
			return store.ErrStop
		}
		if r.ExpiresAt.Before(before) {
			c := *r
			drop = append(drop, &c)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, r := range drop {
		if err := contracts.Delete(tx, []byte(r.ID)); err != nil {
			return 0, err
		}
		if err := byPeer.Delete(tx, peerKey(r.Peer, r.CreatedAt, r.ID)); err != nil {
			return 0, err
		}
	}
	return len(drop), nil
}
