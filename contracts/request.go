package contracts

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// AutoSessionPurpose is the session_purpose of automatic negotiations.
const AutoSessionPurpose = "automatic"

// defaultRequest fills what a request leaves out: the transports this
// agent serves at the peer's endpoint, the tiers it has enabled (tier 1
// only when a capability is named) and its private fields. An empty list
// given explicitly is sent as such (the peer answers TP-NEG001 or
// TP-NEG002).
func (cm *Manager) defaultRequest(req *negotiate.Request, endpoint string) {
	cfg := cm.cfg
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
func (cm *Manager) Negotiate(ctx context.Context, peerID string, req negotiate.Request) (*Info, error) {
	p, ok := cm.net.Peer(peerID)
	if !ok {
		return nil, errNoPeer(peerID)
	}
	if req.RevokeContractID != "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "revoke a contract with POST /contracts/{id}/revoke").With("field", "revoke_contract_id")
	}
	cm.defaultRequest(&req, p.Endpoint)
	required := negotiate.RequiredSecurity(&req, cm.a.Identity().SystemID, p.SystemID, cm.cfg.MinSecurity())
	payload, err := wire.NewJSONPayload(&req)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "negotiate_request: %v", err)
	}
	type answer struct {
		c   *negotiate.Contract
		raw []byte
	}
	ans, err := negotiate.Exchange(ctx, cm.cfg.Attempts(), func(ctx context.Context, attempt int) (answer, error) {
		c, raw, err := cm.request(ctx, p, payload)
		if err != nil {
			cm.log.Debug("negotiation attempt failed", "peer", peerID, "attempt", attempt, "err", err)
		}
		return answer{c, raw}, err
	})
	if err != nil {
		return nil, err
	}
	if err := negotiate.CheckContract(&req, ans.c, required, cm.clock.Now()); err != nil {
		cm.log.Warn("contract refused", "peer", peerID, "err", err)
		return nil, err
	}
	rec, err := cm.save(ctx, peerID, RoleRequester, ans.c, ans.raw)
	if err != nil {
		return nil, err
	}
	// Messages that waited for a contract go now.
	cm.net.Wake(peerID)
	return cm.info(rec)
}

// HTTP statuses of answers, as transport.Outcome reports them on any
// wire.
const (
	statusOK              = 200
	statusUnauthorized    = 401
	statusRequestTimeout  = 408
	statusTooManyRequests = 429
)

// request is one attempt: a fresh signed negotiate_request, and the peer's
// signed negotiate_response checked. Failures another attempt may cure
// wrap negotiate.ErrRetriable; the peer's refusals are returned as its
// TPError.
func (cm *Manager) request(ctx context.Context, p Peer, payload wire.RawPayload) (*negotiate.Contract, []byte, error) {
	msg, err := cm.envelope(wire.MsgNegotiateRequest, p.ID, "", "", payload)
	if err != nil {
		return nil, nil, wire.Errorf(wire.CodeInternal, "sign negotiate_request: %v", err)
	}
	o := cm.net.Send(ctx, p, msg)
	switch {
	case o.Status == 0: // no answer
		return nil, nil, fmt.Errorf("%w: %v", negotiate.ErrRetriable, o.Err)
	case o.Status/100 == 2 && o.Status != statusOK:
		return nil, nil, wire.Errorf(wire.CodeCapabilityLacking, "%s does not negotiate: it answered %d without a contract", p.ID, o.Status)
	case o.Status != statusOK:
		if e := o.Error; e != nil {
			// A peer that has not accepted this agent yet will not within
			// the retries: its refusal is the answer (see package peer).
			if _, known := wire.Lookup(e.Code); known && (!e.Retriable || e.Code == wire.CodePeerApprovalPending) {
				return nil, nil, e
			}
		}
		if o.Status/100 == 5 || o.Status == statusTooManyRequests || o.Status == statusRequestTimeout {
			return nil, nil, fmt.Errorf("%w: %v", negotiate.ErrRetriable, o.Err)
		}
		return nil, nil, wire.Errorf(wire.CodePeerUnreachable, "%s answered the negotiation with %v", p.ID, o.Err)
	}
	env, err := wire.DecodeEnvelope(o.Reply, false)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case env.Sender.AgentID != p.ID:
		return nil, nil, wire.Errorf(wire.CodeIDUnknownSender, "the answer is from %q, not %s", env.Sender.AgentID, p.ID)
	case wire.Verify(env, p.Key) != nil:
		return nil, nil, wire.Errorf(wire.CodeIDUnknownSender, "the answer of %s is not signed with its pinned key", p.ID)
	case env.MessageType != wire.MsgNegotiateResponse || env.CorrelationID != msg.MessageID:
		return nil, nil, wire.Errorf(wire.CodeMessageFormatInvalid, "the answer is a %s for %q, not the negotiate_response for %s",
			env.MessageType, env.CorrelationID, msg.MessageID)
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

// lock serialises the automatic negotiations with one peer.
func (cm *Manager) lock(peer string) func() {
	cm.mu.Lock()
	l := cm.locks[peer]
	if l == nil {
		l = &sync.Mutex{}
		cm.locks[peer] = l
	}
	cm.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// Ensure returns the active contract with peer, negotiating one when there
// is none or when the active one is stale (the peer refused it: its id).
// It returns no contract and no failure for a peer that does not
// negotiate. A failure is the outcome the message that needed the
// contract gets (see the package doc): a peer that could not be reached,
// did not know this agent yet (401) or timed out (TP-NEG020) is Retry and
// Unreached; a refusal (TP-NEG003…006, a contract below what this agent
// requires) is Permanent with the refusal as its Error.
func (cm *Manager) Ensure(ctx context.Context, peerID, stale string) (*negotiate.Contract, *transport.Outcome) {
	unlock := cm.lock(peerID)
	defer unlock()
	c, _, err := cm.active(peerID, cm.clock.Now())
	if err != nil {
		return nil, &transport.Outcome{Class: transport.Retry, Err: fmt.Errorf("%w: %v", transport.ErrNotDelivered, err)}
	}
	if c != nil && c.ContractID != stale {
		return c, nil
	}
	ci, err := cm.Negotiate(ctx, peerID, negotiate.Request{SessionPurpose: AutoSessionPurpose})
	if err == nil {
		cm.log.Info("contract negotiated before delivery", "peer", peerID, "contract_id", ci.Contract.ContractID,
			"tier", ci.Contract.CommunicationTier, "security_level", ci.Contract.SecurityLevel)
		return ci.Contract, nil
	}
	if !peerNegotiates(err) {
		cm.log.Warn("the peer does not negotiate: sending without a contract", "peer", peerID, "err", err)
		return nil, nil
	}
	return nil, negotiationFailed(peerID, err)
}

// negotiationFailed classifies a failed automatic negotiation.
func negotiationFailed(peerID string, err error) *transport.Outcome {
	o := &transport.Outcome{Err: fmt.Errorf("%w: no contract with %s: %v", transport.ErrNotDelivered, peerID, err)}
	var we *wire.Error
	if !errors.As(err, &we) {
		o.Class, o.Unreached = transport.Retry, true
		return o
	}
	o.Error = we
	switch {
	case we.Status() == statusUnauthorized || we.Retriable || we.Code == wire.CodePeerUnreachable:
		o.Class, o.Unreached = transport.Retry, true
	default:
		o.Class = transport.Permanent
	}
	return o
}

// peerNegotiates tells whether a negotiation failure means the peer does
// not negotiate at all.
func peerNegotiates(err error) bool {
	var we *wire.Error
	return !errors.As(err, &we) || we.Code != wire.CodeCapabilityLacking
}

// RefusesContract reports whether a peer's answer to a message refuses
// its contract reference (or its absence): a Negotiable outcome whose
// TPError is TP-NEG010 (428), TP-NEG011 (404) or TP-NEG012 (410). The
// sender then records the contract as revoked by the peer, calls Ensure
// with it as stale and sends the message again.
func RefusesContract(o transport.Outcome) bool {
	if o.Class != transport.Negotiable || o.Error == nil {
		return false
	}
	switch o.Error.Code {
	case wire.CodeNegContractMissing, wire.CodeNegContractUnknown, wire.CodeNegContractExpired:
		return true
	}
	return false
}

func errNoPeer(id string) error {
	return wire.Errorf(wire.CodeNotFound, "no paired peer %q", id).With("agent_id", id)
}
