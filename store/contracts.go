package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Protocol contracts (seed 002 §8.3, SPEC §7), kept by both agents of a
// negotiation:
//
//	contracts       contract_id → ContractRecord JSON
//	contracts_peer  peer 0x00 created_at(unix ns, uint64 BE) contract_id → empty
//
// A contract's terms are written once, as the exact JSON that was made or
// received, and never rewritten: PutContract refuses an id that exists.
// Revocation is recorded next to the terms, once. The buckets are created
// by the first write that needs them.
var (
	bucketContracts     = []byte("contracts")
	bucketContractsPeer = []byte("contracts_peer")
)

// ErrBadContractKey: a contract without an id or peer, or with a NUL byte
// in one.
var ErrBadContractKey = errors.New("contract record needs an id and a peer without NUL bytes")

// errStopScan ends a ForEach early.
var errStopScan = errors.New("stop scan")

// ContractRecord is one party's copy of a contract.
type ContractRecord struct {
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
func (r *ContractRecord) Revoked() bool { return !r.RevokedAt.IsZero() }

func contractPeerKey(peer string, created time.Time, id string) []byte {
	k := make([]byte, 0, len(peer)+1+8+len(id))
	k = append(k, peer...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(created.UnixNano()))
	return append(k, id...)
}

// PutContract stores a new contract; ErrExists if its id is taken (terms
// never change).
func (tx *Tx) PutContract(r *ContractRecord) error {
	if r.ID == "" || r.Peer == "" || bytes.IndexByte([]byte(r.ID+r.Peer), 0) >= 0 {
		return ErrBadContractKey
	}
	if !json.Valid(r.Contract) {
		return fmt.Errorf("contract %s: terms are not JSON", r.ID)
	}
	b, err := tx.bucket(bucketContracts)
	if err != nil {
		return err
	}
	if b.Get([]byte(r.ID)) != nil {
		return fmt.Errorf("contract %s: %w", r.ID, ErrExists)
	}
	idx, err := tx.bucket(bucketContractsPeer)
	if err != nil {
		return err
	}
	if err := idx.Put(contractPeerKey(r.Peer, r.CreatedAt, r.ID), nil); err != nil {
		return err
	}
	return putJSON(b, []byte(r.ID), r)
}

// Contract reads one contract; ErrNotFound if there is none.
func (tx *Tx) Contract(id string) (*ContractRecord, error) {
	b, err := tx.bucket(bucketContracts)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, ErrNotFound
	}
	r := new(ContractRecord)
	if err := getJSON(b, []byte(id), r); err != nil {
		return nil, err
	}
	return r, nil
}

// RevokeContract records that a contract was revoked at `at` by `by`. A
// contract revoked before keeps its first revocation; the record is
// returned either way.
func (tx *Tx) RevokeContract(id string, at time.Time, by string) (*ContractRecord, error) {
	r, err := tx.Contract(id)
	if err != nil {
		return nil, err
	}
	if r.Revoked() {
		return r, nil
	}
	r.RevokedAt, r.RevokedBy = at.UTC(), by
	b, err := tx.bucket(bucketContracts)
	if err != nil {
		return nil, err
	}
	return r, putJSON(b, []byte(id), r)
}

// PeerContracts lists a peer's contracts, newest first, at most limit
// (limit <= 0: all).
func (tx *Tx) PeerContracts(peer string, limit int) ([]*ContractRecord, error) {
	idx, err := tx.bucket(bucketContractsPeer)
	if err != nil || idx == nil {
		return nil, err
	}
	prefix := append([]byte(peer), 0)
	end := append([]byte(peer), 1)
	var out []*ContractRecord
	c := idx.Cursor()
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		if limit > 0 && len(out) == limit {
			break
		}
		if len(k) < len(prefix)+8 {
			continue
		}
		r, err := tx.Contract(string(k[len(prefix)+8:]))
		if errors.Is(err, ErrNotFound) {
			continue // pruned
		}
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Contracts lists contracts in id order (UUID v7: creation order) after
// the id `after`, at most limit, and the id to continue after ("" when
// there are no more).
func (tx *Tx) Contracts(after string, limit int) ([]*ContractRecord, string, error) {
	b, err := tx.bucket(bucketContracts)
	if err != nil || b == nil {
		return nil, "", err
	}
	c := b.Cursor()
	var k, v []byte
	if after == "" {
		k, v = c.First()
	} else if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
		k, v = c.Next()
	}
	var out []*ContractRecord
	for ; k != nil; k, v = c.Next() {
		if len(out) == limit {
			return out, out[len(out)-1].ID, nil
		}
		r := new(ContractRecord)
		if err := json.Unmarshal(v, r); err != nil {
			return nil, "", fmt.Errorf("decode contract %q: %w", k, err)
		}
		out = append(out, r)
	}
	return out, "", nil
}

// PruneContracts deletes up to limit contracts that expired before
// `before`, and reports how many it deleted.
func (tx *Tx) PruneContracts(before time.Time, limit int) (int, error) {
	b, err := tx.bucket(bucketContracts)
	if err != nil || b == nil {
		return 0, err
	}
	idx, err := tx.bucket(bucketContractsPeer)
	if err != nil {
		return 0, err
	}
	var drop []*ContractRecord
	err = b.ForEach(func(k, v []byte) error {
		if len(drop) == limit {
			return errStopScan
		}
		r := new(ContractRecord)
		if err := json.Unmarshal(v, r); err != nil {
			return fmt.Errorf("decode contract %q: %w", k, err)
		}
		if r.ExpiresAt.Before(before) {
			drop = append(drop, r)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return 0, err
	}
	for _, r := range drop {
		if err := b.Delete([]byte(r.ID)); err != nil {
			return 0, err
		}
		if err := idx.Delete(contractPeerKey(r.Peer, r.CreatedAt, r.ID)); err != nil {
			return 0, err
		}
	}
	return len(drop), nil
}
