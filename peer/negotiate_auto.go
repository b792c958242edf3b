package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// Automatic negotiation (seed 002 §8.3.3, §8.3.4).
//
// A peer refuses a message without an active contract (TP-NEG010), so the
// outbox never sends one without: before a message that needs a contract
// (every type but those exempt, see negotiate_guard.go) goes to a peer
// with no active contract here, this agent negotiates one with the
// configured defaults (the tiers it serves, its minimum security level,
// raised to high across systems by both sides). One negotiation per peer
// runs at a time; messages to that peer wait for it.
//
// Renegotiation is the same step: a contract that expired or was revoked
// is no longer active, so the next message negotiates a new one instead of
// ending as a dead letter with TP-NEG012. When the peer refuses the
// contract named in a message (TP-NEG010, TP-NEG011 or TP-NEG012: it
// expired there first, or the peer lost or revoked it and the revocation
// has not arrived yet), this agent records the contract as revoked by the
// peer, negotiates a new one and sends the message once more.
//
// How a failed negotiation ends the delivery attempt: a peer that could
// not be reached, did not know this agent yet (401) or timed out
// (TP-NEG020) is retried like any unreachable destination; a refusal
// (TP-NEG003…006, a contract below what this agent requires) makes the
// message a dead letter whose last_error is the refusal; a peer that does
// not negotiate at all (it answered without a contract) gets the message
// without one.

// autoNegotiator serialises the automatic negotiations per peer.
type autoNegotiator struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (an *autoNegotiator) lock(peer string) func() {
	an.mu.Lock()
	if an.locks == nil {
		an.locks = map[string]*sync.Mutex{}
	}
	l := an.locks[peer]
	if l == nil {
		l = &sync.Mutex{}
		an.locks[peer] = l
	}
	an.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// AutoSessionPurpose is the session_purpose of automatic negotiations.
const AutoSessionPurpose = "automatic"

// sendUnderContract signs and sends one outbox message to p under the
// active contract, negotiating one first when there is none. A failure of
// the negotiation is returned as a *deliveryError; a transport error of
// the send as is (classify makes it unreachable).
func (n *Network) sendUnderContract(ctx context.Context, p *peer, msgType, id, corr string, pl wire.RawPayload, s Sequence) (postResult, error) {
	peerID := p.rec.AgentID
	var c *negotiate.Contract
	if !exempt(msgType) {
		var derr *deliveryError
		if c, derr = n.ensureContract(ctx, peerID, ""); derr != nil {
			return postResult{}, derr
		}
	}
	r, err := n.sendUnder(ctx, p, c, msgType, id, corr, pl, s)
	if err != nil || c == nil || !contractRefused(r) {
		return r, err
	}
	// The peer does not hold c as active: a new contract, and once more.
	n.log.Info("the peer refused the contract: negotiating again", "peer", peerID, "contract_id", c.ContractID, "err", answerError(r))
	if err := n.revokedByPeer(ctx, peerID, c.ContractID); err != nil {
		n.log.Warn("record the peer's refusal of a contract", "contract_id", c.ContractID, "err", err)
	}
	c, derr := n.ensureContract(ctx, peerID, c.ContractID)
	if derr != nil {
		return postResult{}, derr
	}
	return n.sendUnder(ctx, p, c, msgType, id, corr, pl, s)
}

// sendUnder signs the message under c (nil: none) and posts it.
func (n *Network) sendUnder(ctx context.Context, p *peer, c *negotiate.Contract, msgType, id, corr string, pl wire.RawPayload, s Sequence) (postResult, error) {
	m, err := n.envelopeUnder(c, msgType, p.rec.AgentID, id, corr, pl)
	if err != nil {
		return postResult{}, &deliveryError{err: err, permanent: true}
	}
	return n.sendEnvelopeSeq(ctx, p.rec.Endpoint, m, s)
}

// contractRefused reports whether an answer refuses the message's
// contract reference (or its absence).
func contractRefused(r postResult) bool {
	switch r.status {
	case http.StatusPreconditionRequired, http.StatusNotFound, http.StatusGone:
	default:
		return false
	}
	var eb wire.ErrorBody
	if wire.JSON.Unmarshal(r.body, &eb) != nil || eb.Error == nil {
		return false
	}
	switch eb.Error.Code {
	case wire.CodeNegContractMissing, wire.CodeNegContractUnknown, wire.CodeNegContractExpired:
		return true
	}
	return false
}

// ensureContract returns the active contract with peer, negotiating one
// when there is none or when the active one is stale (the peer refused
// it). It returns nil without error for a peer that does not negotiate.
func (n *Network) ensureContract(ctx context.Context, peerID, stale string) (*negotiate.Contract, *deliveryError) {
	unlock := n.auto.lock(peerID)
	defer unlock()
	c, _, err := n.activeContract(peerID, n.clock.Now())
	if err != nil {
		return nil, &deliveryError{err: err}
	}
	if c != nil && c.ContractID != stale {
		return c, nil
	}
	ci, err := n.Negotiate(ctx, peerID, negotiate.Request{SessionPurpose: AutoSessionPurpose})
	if err == nil {
		n.log.Info("contract negotiated before delivery", "peer", peerID, "contract_id", ci.Contract.ContractID,
			"tier", ci.Contract.CommunicationTier, "security_level", ci.Contract.SecurityLevel)
		return ci.Contract, nil
	}
	if !peerNegotiates(err) {
		n.log.Warn("the peer does not negotiate: sending without a contract", "peer", peerID, "err", err)
		return nil, nil
	}
	return nil, negotiationFailed(peerID, err)
}

// negotiationFailed classifies a failed automatic negotiation for the
// outbox (see the top of this file).
func negotiationFailed(peerID string, err error) *deliveryError {
	derr := &deliveryError{err: fmt.Errorf("%w: no contract with %s: %v", errNotDelivered, peerID, err)}
	var we *wire.Error
	if !errors.As(err, &we) {
		derr.unreachable = true
		return derr
	}
	derr.code = we.Code
	switch {
	case we.Status() == http.StatusUnauthorized || we.Retriable || we.Code == wire.CodePeerUnreachable:
		derr.unreachable = true
	default:
		derr.permanent = true
	}
	return derr
}

// peerNegotiates tells whether a negotiation failure means the peer does
// not negotiate at all.
func peerNegotiates(err error) bool {
	var we *wire.Error
	return !errors.As(err, &we) || we.Code != wire.CodeCapabilityLacking
}
