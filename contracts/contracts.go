package contracts

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts/contractdb"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer/peerdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Roles of a stored contract.
const (
	RoleRequester = "requester"
	RoleResponder = "responder"
)

// Contract retention and lookup bounds.
const (
	// contractKeep is how long expired contracts stay, so that late
	// messages get TP-NEG012 rather than TP-NEG011.
	contractKeep = 7 * 24 * time.Hour
	// peerContractScan bounds the contracts read to find a peer's active
	// one.
	peerContractScan = 64
)

// Peer is a paired agent as the network knows it.
type Peer struct {
	ID       string
	SystemID string
	Endpoint string
	// Key is its pinned Ed25519 key: its answers must verify with it, and
	// payloads sealed for it use its X25519 form.
	Key ed25519.PublicKey
}

// Manager makes, keeps and enforces one agent's contracts.
type Manager struct {
	a     *agent.Agent
	out   *outbox.Queue
	clock agent.Clock
	cfg   negotiate.Config
	log   *slog.Logger

	// records keeps the records record read (recordCache).
	records recordCache
}

// recordCache keeps contract records as record read them, and each
// peer's newest records as active read them: every message under a
// contract, in and out, looks its contract up, and reading and decoding
// the records costs as much as the rest of the lookup. Records change
// only through the Manager: a new contract and the pruning of old ones
// (save), and the revocations (Revoke, RevokedByPeer). Each drops the
// cache when its transaction commits, after readers can see what it
// wrote; gen keeps a read that started before the drop from being kept
// after it. Records are shared and must not be changed.
type recordCache struct {
	mu    sync.Mutex
	gen   uint64
	m     map[string]*contractdb.Record
	peers map[string][]*contractdb.Record
}

// recordCacheSize bounds the records kept, and the peers.
const recordCacheSize = 256

func (rc *recordCache) get(id string) (*contractdb.Record, uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.m[id], rc.gen
}

// put keeps rec unless the cache was dropped since gen.
func (rc *recordCache) put(rec *contractdb.Record, gen uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.gen != gen {
		return
	}
	if rc.m == nil || len(rc.m) >= recordCacheSize {
		rc.m = map[string]*contractdb.Record{} // bounded: start again
	}
	rc.m[rec.ID] = rec
}

// ofPeer is peer's newest records as kept (ok false: not kept), and the
// generation to keep them under.
func (rc *recordCache) ofPeer(peer string) (recs []*contractdb.Record, ok bool, gen uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	recs, ok = rc.peers[peer]
	return recs, ok, rc.gen
}

// putPeer keeps peer's newest records unless the cache was dropped since
// gen.
func (rc *recordCache) putPeer(peer string, recs []*contractdb.Record, gen uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.gen != gen {
		return
	}
	if rc.peers == nil || len(rc.peers) >= recordCacheSize {
		rc.peers = map[string][]*contractdb.Record{} // bounded: start again
	}
	rc.peers[peer] = recs
}

// drop forgets every record (a contract changed).
func (rc *recordCache) drop() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.gen++
	rc.m, rc.peers = nil, nil
}

// New returns the contract manager of a, which queues the revocations
// it tells peers in out; it logs through log (nil: the agent's logger).
func New(a *agent.Agent, out *outbox.Queue, log *slog.Logger) *Manager {
	if log == nil {
		log = a.Logger()
	}
	return &Manager{a: a, out: out, clock: a.Clock(), cfg: a.Config().Negotiation,
		log: log.With("component", "contracts")}
}

// Info is a stored contract as the API shows it.
type Info struct {
	Contract *negotiate.Contract `json:"contract" msgpack:"contract"`
	// Peer is the other agent; Role this agent's side.
	Peer string `json:"peer" msgpack:"peer"`
	Role string `json:"role" msgpack:"role"`
	// Status is active, expired or revoked, now.
	Status    string `json:"status" msgpack:"status"`
	CreatedAt string `json:"created_at" msgpack:"created_at"`
	RevokedAt string `json:"revoked_at,omitempty" msgpack:"revoked_at,omitempty"`
	RevokedBy string `json:"revoked_by,omitempty" msgpack:"revoked_by,omitempty"`
}

// terms decodes a record's frozen terms.
//
// Every message to or from a peer under a contract needs its terms, so
// they are decoded once per record and kept (a record's terms are written
// once and never rewritten: store/contracts.go); the cached value is
// shared and must not be changed. A cached entry is used only for the
// very bytes it was decoded from.
func terms(rec *contractdb.Record) (*negotiate.Contract, error) {
	termsCache.Lock()
	e, ok := termsCache.m[rec.ID]
	termsCache.Unlock()
	if ok && string(e.raw) == string(rec.Contract) {
		return e.c, nil
	}
	var c negotiate.Contract
	if err := wire.JSON.Unmarshal(rec.Contract, &c); err != nil {
		return nil, fmt.Errorf("contract %s: %w", rec.ID, err)
	}
	termsCache.Lock()
	if termsCache.m == nil || len(termsCache.m) >= termsCacheSize {
		termsCache.m = map[string]cachedTerms{} // bounded: start again
	}
	termsCache.m[rec.ID] = cachedTerms{raw: rec.Contract, c: &c}
	termsCache.Unlock()
	return &c, nil
}

// termsCacheSize bounds the decoded terms kept.
const termsCacheSize = 256

type cachedTerms struct {
	raw []byte
	c   *negotiate.Contract
}

var termsCache struct {
	sync.Mutex
	m map[string]cachedTerms
}

func (cm *Manager) info(rec *contractdb.Record) (*Info, error) {
	c, err := terms(rec)
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "%v", err)
	}
	ci := &Info{Contract: c, Peer: rec.Peer, Role: rec.Role,
		Status:    negotiate.StatusAt(rec.ExpiresAt, rec.Revoked(), cm.clock.Now()),
		CreatedAt: wire.FormatTime(rec.CreatedAt), RevokedBy: rec.RevokedBy}
	if rec.Revoked() {
		ci.RevokedAt = wire.FormatTime(rec.RevokedAt)
	}
	return ci, nil
}

// active is the newest contract with peer that is neither expired nor
// revoked at now; nil when there is none. any tells whether there is any
// contract with peer at all (this agent negotiated with it before).
func (cm *Manager) active(peer string, now time.Time) (c *negotiate.Contract, any bool, err error) {
	recs, kept, gen := cm.records.ofPeer(peer)
	if !kept {
		if err := cm.a.Store().View(func(tx *store.Tx) error {
			var err error
			recs, err = contractdb.OfPeer(tx, peer, peerContractScan)
			return err
		}); err != nil {
			return nil, false, wire.Errorf(wire.CodeSysStorage, "read contracts: %v", err)
		}
		cm.records.putPeer(peer, recs, gen)
	}
	for _, rec := range recs {
		if negotiate.StatusAt(rec.ExpiresAt, rec.Revoked(), now) != negotiate.StatusActive {
			continue
		}
		c, err := terms(rec)
		if err != nil {
			return nil, true, wire.Errorf(wire.CodeSysStorage, "%v", err)
		}
		return c, true, nil
	}
	return nil, len(recs) > 0, nil
}

// Active is the newest contract with peer that is neither expired nor
// revoked; nil when there is none.
func (cm *Manager) Active(peer string) (*negotiate.Contract, error) {
	c, _, err := cm.active(peer, cm.clock.Now())
	return c, err
}

// ActiveIn is the active contract with peer read inside tx; nil when there
// is none or it cannot be read.
func ActiveIn(tx *store.Tx, peer string, now time.Time) *negotiate.Contract {
	recs, err := contractdb.OfPeer(tx, peer, peerContractScan)
	if err != nil {
		return nil
	}
	for _, rec := range recs {
		if negotiate.StatusAt(rec.ExpiresAt, rec.Revoked(), now) != negotiate.StatusActive {
			continue
		}
		c, err := terms(rec)
		if err != nil {
			return nil
		}
		return c
	}
	return nil
}

// PersonalDataRefusal is the error a peer's request for a task type marked
// personal_data gets when the contract with the peer is not high; nil when
// it may run.
func (cm *Manager) PersonalDataRefusal(peer, taskType string) *wire.Error {
	c, _, err := cm.active(peer, cm.clock.Now())
	if err != nil {
		return wire.AsError(err)
	}
	level := negotiate.SecurityLevel("none")
	if c != nil {
		if c.SecurityLevel.AtLeast(negotiate.High) {
			return nil
		}
		level = c.SecurityLevel
	}
	return wire.Errorf(wire.CodeNegSecurity, "task type %q carries personal data: it needs a high contract, the contract with %s is %s",
		taskType, peer, level).With("required", negotiate.High).With("security_level", level)
}

// save stores a new contract and drops contracts long expired.
func (cm *Manager) save(ctx context.Context, peer, role string, c *negotiate.Contract, raw []byte) (*contractdb.Record, error) {
	exp, err := c.Expires()
	if err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "contract_expiration: %v", err)
	}
	now := cm.clock.Now().UTC()
	rec := &contractdb.Record{ID: c.ContractID, Peer: peer, Role: role, Contract: raw, ExpiresAt: exp.UTC(), CreatedAt: now}
	err = cm.a.Store().Update(ctx, func(tx *store.Tx) error {
		if err := contractdb.Put(tx, rec); err != nil {
			return err
		}
		tx.OnCommit(cm.records.drop) // and what Prune deletes below
		if err := cm.a.AuditIn(tx, agent.AuditContractMade, peer, map[string]any{"contract_id": c.ContractID, "role": role,
			"expires_at": rec.ExpiresAt, "contract_sha256": sha256Hex(raw)}); err != nil {
			return err
		}
		_, err := contractdb.Prune(tx, now.Add(-contractKeep), 100)
		return err
	})
	switch {
	case errors.Is(err, store.ErrExists):
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "a contract %s exists already", c.ContractID)
	case err != nil:
		return nil, wire.Errorf(wire.CodeSysStorage, "store contract: %v", err)
	}
	cm.log.Info("contract made", "contract", c.String(), "peer", peer, "role", role)
	return rec, nil
}

// Query selects contracts: of one peer (newest first, up to Limit) or all
// (in id order, paged by After).
type Query struct {
	Peer  string
	After string
	Limit int
}

// List lists stored contracts and the page token of the next page.
func (cm *Manager) List(q Query) ([]Info, string, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		q.Limit = 100
	}
	var recs []*contractdb.Record
	var next string
	err := cm.a.Store().View(func(tx *store.Tx) error {
		var err error
		if q.Peer != "" {
			recs, err = contractdb.OfPeer(tx, q.Peer, q.Limit)
			return err
		}
		recs, next, err = contractdb.List(tx, q.After, q.Limit)
		return err
	})
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeSysStorage, "read contracts: %v", err)
	}
	out := make([]Info, 0, len(recs))
	for _, r := range recs {
		ci, err := cm.info(r)
		if err != nil {
			return nil, "", err
		}
		out = append(out, *ci)
	}
	return out, next, nil
}

// Get reads one contract; TP-NEG011 (404) when there is none.
func (cm *Manager) Get(id string) (*Info, error) {
	rec, err := cm.record(id)
	if err != nil {
		return nil, err
	}
	return cm.info(rec)
}

// record reads contract id (shared: not to be changed).
func (cm *Manager) record(id string) (*contractdb.Record, error) {
	rec, gen := cm.records.get(id)
	if rec != nil {
		return rec, nil
	}
	err := cm.a.Store().View(func(tx *store.Tx) error {
		var err error
		rec, err = contractdb.Get(tx, id)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, wire.Errorf(wire.CodeNegContractUnknown, "no contract %q", id).With("contract_id", id)
	case err != nil:
		return nil, wire.Errorf(wire.CodeSysStorage, "read contract: %v", err)
	}
	cm.records.put(rec, gen)
	return rec, nil
}

// Revoke revokes a contract here and, in the same transaction, queues the
// revocation for the peer (a negotiate_request with revoke_contract_id,
// seed 002 §8.3.3). Revoking it again changes nothing.
func (cm *Manager) Revoke(ctx context.Context, id string) (*Info, error) {
	rec, err := cm.record(id)
	if err != nil {
		return nil, err
	}
	if rec.Revoked() {
		return cm.info(rec)
	}
	err = cm.a.Store().Update(ctx, func(tx *store.Tx) error {
		var err error
		if rec, err = contractdb.Revoke(tx, id, cm.clock.Now(), "local"); err != nil {
			return err
		}
		tx.OnCommit(cm.records.drop)
		if err := cm.a.AuditIn(tx, agent.AuditContractRevoked, rec.Peer, map[string]any{"contract_id": id, "by": "local"}); err != nil {
			return err
		}
		switch _, err := peerdb.Get(tx, rec.Peer); {
		case errors.Is(err, store.ErrNotFound):
			return nil // no longer paired: nobody to tell
		case err != nil:
			return err
		}
		_, err = cm.out.Enqueue(tx, outbox.Message{Peer: rec.Peer, Type: wire.MsgNegotiateRequest,
			Payload: map[string]string{"revoke_contract_id": id}})
		return err
	})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "revoke contract: %v", err)
	}
	cm.log.Info("contract revoked", "contract_id", id, "peer", rec.Peer)
	return cm.info(rec)
}

// RevokedByPeer records the peer's revocation of one of its contracts
// with this agent (TP-NEG011 for a contract it does not share).
func (cm *Manager) RevokedByPeer(ctx context.Context, peer, id string) error {
	var rec *contractdb.Record
	err := cm.a.Store().Update(ctx, func(tx *store.Tx) error {
		r, err := contractdb.Get(tx, id)
		if err != nil {
			return err
		}
		if r.Peer != peer {
			return store.ErrNotFound
		}
		if rec, err = contractdb.Revoke(tx, id, cm.clock.Now(), peer); err != nil {
			return err
		}
		tx.OnCommit(cm.records.drop)
		return cm.a.AuditIn(tx, agent.AuditContractRevoked, peer, map[string]any{"contract_id": id, "by": peer})
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return wire.Errorf(wire.CodeNegContractUnknown, "no contract %q with %s", id, peer).With("contract_id", id)
	case err != nil:
		return wire.Errorf(wire.CodeSysStorage, "revoke contract: %v", err)
	}
	cm.log.Info("contract revoked by the peer", "contract_id", id, "peer", peer, "revoked_by", rec.RevokedBy)
	return nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
