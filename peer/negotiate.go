package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Protocol negotiation (seed 002 chapter 08, SPEC §7), the agent's side.
//
// A requester (Negotiate) sends negotiate_request to a paired peer over
// POST /message and gets the contract back in the synchronous answer, a
// signed negotiate_response; each attempt is bounded by
// negotiation.timeout_ms and failed attempts are retried up to
// negotiation.retries times before TP-NEG020 (negotiate.Exchange). The
// responder (negotiate_answer.go) decides with negotiate.Decide. Both keep
// the contract in the store, frozen, with their role.
//
// Every later envelope carries the active contract's id in
// protocol_contract_ref, and every envelope received is checked against it
// (negotiate_guard.go). A contract ends when it expires or when either side
// revokes it; revocation is sent to the other side as a negotiate_request
// with revoke_contract_id, through the durable outbox.

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

// ContractInfo is a stored contract as the API shows it.
type ContractInfo struct {
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

// contractTerms decodes a record's frozen terms.
func contractTerms(rec *store.ContractRecord) (*negotiate.Contract, error) {
	var c negotiate.Contract
	if err := wire.JSON.Unmarshal(rec.Contract, &c); err != nil {
		return nil, fmt.Errorf("contract %s: %w", rec.ID, err)
	}
	return &c, nil
}

func (n *Network) contractInfo(rec *store.ContractRecord) (*ContractInfo, error) {
	c, err := contractTerms(rec)
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "%v", err)
	}
	ci := &ContractInfo{Contract: c, Peer: rec.Peer, Role: rec.Role,
		Status:    negotiate.StatusAt(rec.ExpiresAt, rec.Revoked(), n.clock.Now()),
		CreatedAt: wire.FormatTime(rec.CreatedAt), RevokedBy: rec.RevokedBy}
	if rec.Revoked() {
		ci.RevokedAt = wire.FormatTime(rec.RevokedAt)
	}
	return ci, nil
}

// activeContract is the newest contract with peer that is neither expired
// nor revoked at now; nil when there is none. any tells whether there is
// any contract with peer at all (this agent negotiated with it before).
func (n *Network) activeContract(peer string, now time.Time) (c *negotiate.Contract, any bool, err error) {
	var recs []*store.ContractRecord
	if err := n.db.View(func(tx *store.Tx) error {
		var err error
		recs, err = tx.PeerContracts(peer, peerContractScan)
		return err
	}); err != nil {
		return nil, false, wire.Errorf(wire.CodeSysStorage, "read contracts: %v", err)
	}
	for _, rec := range recs {
		if negotiate.StatusAt(rec.ExpiresAt, rec.Revoked(), now) != negotiate.StatusActive {
			continue
		}
		c, err := contractTerms(rec)
		if err != nil {
			return nil, true, wire.Errorf(wire.CodeSysStorage, "%v", err)
		}
		return c, true, nil
	}
	return nil, len(recs) > 0, nil
}

// saveContract stores a new contract and drops contracts long expired.
func (n *Network) saveContract(ctx context.Context, peer, role string, c *negotiate.Contract, raw []byte) (*store.ContractRecord, error) {
	exp, err := c.Expires()
	if err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "contract_expiration: %v", err)
	}
	now := n.clock.Now().UTC()
	rec := &store.ContractRecord{ID: c.ContractID, Peer: peer, Role: role, Contract: raw, ExpiresAt: exp.UTC(), CreatedAt: now}
	err = n.db.Update(ctx, func(tx *store.Tx) error {
		if err := tx.PutContract(rec); err != nil {
			return err
		}
		if err := n.a.AuditIn(tx, agent.AuditContractMade, peer, map[string]any{"contract_id": c.ContractID, "role": role,
			"expires_at": rec.ExpiresAt, "contract_sha256": sha256Hex(raw)}); err != nil {
			return err
		}
		_, err := tx.PruneContracts(now.Add(-contractKeep), 100)
		return err
	})
	switch {
	case errors.Is(err, store.ErrExists):
		return nil, wire.Errorf(wire.CodeInvalidStateChange, "a contract %s exists already", c.ContractID)
	case err != nil:
		return nil, wire.Errorf(wire.CodeSysStorage, "store contract: %v", err)
	}
	n.log.Info("contract made", "contract", c.String(), "peer", peer, "role", role)
	return rec, nil
}

// defaultRequest fills what a request leaves out: the transports this
// agent serves at the peer's endpoint, the tiers it has enabled (tier 1
// only when a capability is named) and its private fields. An empty list
// given explicitly is sent as such (the peer answers TP-NEG001 or
// TP-NEG002).
func (n *Network) defaultRequest(req *negotiate.Request, endpoint string) {
	cfg := n.cfg.Negotiation
	if req.CandidateTransports == nil {
		for _, p := range cfg.EffectiveTransports() {
			req.CandidateTransports = append(req.CandidateTransports,
				negotiate.Transport{Protocol: p, Endpoint: negotiate.EndpointFor(p, endpoint), Version: wire.ProtocolVersion})
		}
	}
	if req.PrivateFields == nil {
		req.PrivateFields = cfg.PrivateFields
	}
	if req.CandidateTiers == nil {
		for _, t := range cfg.EffectiveTiers() {
			if t != negotiate.Tier1 || req.Capability != nil {
				req.CandidateTiers = append(req.CandidateTiers, t)
			}
		}
		if len(req.CandidateTiers) == 0 {
			req.CandidateTiers = []negotiate.Tier{negotiate.Tier3}
		}
	}
}

// Negotiate asks peer for a contract with req (candidate lists left nil
// are filled from the configuration) and stores the contract it answers
// with. A refusal is the peer's TPError as is (TP-NEG00x with the seed's
// rejected/reason/alternative_proposal in details); a contract that breaks
// seed 002 §8.4.3 or is below the security this agent requires (the
// requested level, its minimum, high across systems and for consult) is
// refused and not stored.
func (n *Network) Negotiate(ctx context.Context, peerID string, req negotiate.Request) (*ContractInfo, error) {
	p := n.peers.get(peerID)
	if p == nil {
		return nil, errNoPeer(peerID)
	}
	if req.RevokeContractID != "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "revoke a contract with POST /contracts/{id}/revoke").With("field", "revoke_contract_id")
	}
	n.defaultRequest(&req, p.rec.Endpoint)
	required := negotiate.RequiredSecurity(&req, n.a.Identity().SystemID, p.rec.SystemID, n.cfg.Negotiation.MinSecurity())
	payload, err := wire.NewJSONPayload(&req)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "negotiate_request: %v", err)
	}
	type answer struct {
		c   *negotiate.Contract
		raw []byte
	}
	ans, err := negotiate.Exchange(ctx, n.cfg.Negotiation.Attempts(), func(ctx context.Context, attempt int) (answer, error) {
		c, raw, err := n.requestContract(ctx, p, payload)
		if err != nil {
			n.log.Debug("negotiation attempt failed", "peer", peerID, "attempt", attempt, "err", err)
		}
		return answer{c, raw}, err
	})
	if err != nil {
		return nil, err
	}
	if err := negotiate.CheckContract(&req, ans.c, required, n.clock.Now()); err != nil {
		n.log.Warn("contract refused", "peer", peerID, "err", err)
		return nil, err
	}
	rec, err := n.saveContract(ctx, peerID, RoleRequester, ans.c, ans.raw)
	if err != nil {
		return nil, err
	}
	// Messages that waited for a contract go now.
	n.spawn(func() { n.out.wake(peerID) })
	return n.contractInfo(rec)
}

// requestContract is one attempt: a fresh signed negotiate_request, and
// the peer's signed negotiate_response checked. Failures another attempt
// may cure wrap negotiate.ErrRetriable; the peer's refusals are returned
// as its TPError.
func (n *Network) requestContract(ctx context.Context, p *peer, payload wire.RawPayload) (*negotiate.Contract, []byte, error) {
	m, err := n.envelope(wire.MsgNegotiateRequest, p.rec.AgentID, "", "", payload)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeInternal, "sign negotiate_request: %v", err)
	}
	r, err := n.sendEnvelope(ctx, p.rec.Endpoint, m)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", negotiate.ErrRetriable, err)
	}
	if r.status/100 == 2 && r.status != http.StatusOK {
		return nil, nil, wire.Errorf(wire.CodeCapabilityLacking, "%s does not negotiate: it answered %d without a contract", p.rec.AgentID, r.status)
	}
	if r.status != http.StatusOK {
		var eb wire.ErrorBody
		if wire.JSON.Unmarshal(r.body, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
			// A peer that has not accepted this agent yet will not within
			// the retries: its refusal is the answer (pairing.go).
			if _, known := wire.Lookup(eb.Error.Code); known && (!eb.Error.Retriable || eb.Error.Code == wire.CodePeerApprovalPending) {
				return nil, nil, eb.Error
			}
		}
		if r.status/100 == 5 || r.status == http.StatusTooManyRequests || r.status == http.StatusRequestTimeout {
			return nil, nil, fmt.Errorf("%w: %v", negotiate.ErrRetriable, answerError(r))
		}
		return nil, nil, wire.Errorf(wire.CodePeerUnreachable, "%s answered the negotiation with %v", p.rec.AgentID, answerError(r))
	}
	env, err := wire.DecodeEnvelope(r.body, false)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case env.Sender.AgentID != p.rec.AgentID:
		return nil, nil, wire.Errorf(wire.CodeIDUnknownSender, "the answer is from %q, not %s", env.Sender.AgentID, p.rec.AgentID)
	case wire.Verify(env, p.pub) != nil:
		return nil, nil, wire.Errorf(wire.CodeIDUnknownSender, "the answer of %s is not signed with its pinned key", p.rec.AgentID)
	case env.MessageType != wire.MsgNegotiateResponse || env.CorrelationID != m.MessageID:
		return nil, nil, wire.Errorf(wire.CodeMessageFormatInvalid, "the answer is a %s for %q, not the negotiate_response for %s",
			env.MessageType, env.CorrelationID, m.MessageID)
	}
	c, err := negotiate.DecodeContract(env.Payload)
	if err != nil {
		return nil, nil, err
	}
	raw, err := env.Payload.Convert(wire.PayloadJSON)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeMessageFormatInvalid, "negotiate_response payload: %v", err)
	}
	return c, raw.Bytes(), nil
}

// ContractQuery selects contracts: of one peer (newest first, up to
// Limit) or all (in id order, paged by After).
type ContractQuery struct {
	Peer  string
	After string
	Limit int
}

// Contracts lists stored contracts and the page token of the next page.
func (n *Network) Contracts(q ContractQuery) ([]ContractInfo, string, error) {
	if q.Limit <= 0 || q.Limit > 1000 {
		q.Limit = 100
	}
	var recs []*store.ContractRecord
	var next string
	err := n.db.View(func(tx *store.Tx) error {
		var err error
		if q.Peer != "" {
			recs, err = tx.PeerContracts(q.Peer, q.Limit)
			return err
		}
		recs, next, err = tx.Contracts(q.After, q.Limit)
		return err
	})
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeSysStorage, "read contracts: %v", err)
	}
	out := make([]ContractInfo, 0, len(recs))
	for _, r := range recs {
		ci, err := n.contractInfo(r)
		if err != nil {
			return nil, "", err
		}
		out = append(out, *ci)
	}
	return out, next, nil
}

// Contract reads one contract; TP-NEG011 (404) when there is none.
func (n *Network) Contract(id string) (*ContractInfo, error) {
	rec, err := n.contractRecord(id)
	if err != nil {
		return nil, err
	}
	return n.contractInfo(rec)
}

func (n *Network) contractRecord(id string) (*store.ContractRecord, error) {
	var rec *store.ContractRecord
	err := n.db.View(func(tx *store.Tx) error {
		var err error
		rec, err = tx.Contract(id)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, wire.Errorf(wire.CodeNegContractUnknown, "no contract %q", id).With("contract_id", id)
	case err != nil:
		return nil, wire.Errorf(wire.CodeSysStorage, "read contract: %v", err)
	}
	return rec, nil
}

// RevokeContract revokes a contract here and, in the same transaction,
// queues the revocation for the peer (a negotiate_request with
// revoke_contract_id, seed 002 §8.3.3). Revoking it again changes nothing.
func (n *Network) RevokeContract(ctx context.Context, id string) (*ContractInfo, error) {
	rec, err := n.contractRecord(id)
	if err != nil {
		return nil, err
	}
	if rec.Revoked() {
		return n.contractInfo(rec)
	}
	err = n.db.Update(ctx, func(tx *store.Tx) error {
		var err error
		if rec, err = tx.RevokeContract(id, n.clock.Now(), "local"); err != nil {
			return err
		}
		if err := n.a.AuditIn(tx, agent.AuditContractRevoked, rec.Peer, map[string]any{"contract_id": id, "by": "local"}); err != nil {
			return err
		}
		if !n.Known(rec.Peer) {
			return nil
		}
		return n.out.enqueue(tx, agent.Outgoing{Peer: rec.Peer, Type: wire.MsgNegotiateRequest,
			Payload: map[string]string{"revoke_contract_id": id}})
	})
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "revoke contract: %v", err)
	}
	n.log.Info("contract revoked", "contract_id", id, "peer", rec.Peer)
	return n.contractInfo(rec)
}
