package contracts

import (
	"context"
	"errors"
	"fmt"

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

// A Negotiation is one request for a contract with a paired peer, run
// by the network (package peer), which sends and retries it: Begin checks
// and completes the request, each attempt sends Next's negotiate_request
// and hands the peer's answer to Answered, and Conclude checks the
// contract the peer answered with and keeps it. The manager sends
// nothing itself.
type Negotiation struct {
	cm       *Manager
	peer     Peer
	req      negotiate.Request
	required negotiate.SecurityLevel
	payload  wire.RawPayload

	// c and raw are the contract of the last answer and its JSON.
	c   *negotiate.Contract
	raw []byte
}

// Begin starts a negotiation with p for req, whose candidate lists left
// nil are filled from the configuration.
func (cm *Manager) Begin(p Peer, req negotiate.Request) (*Negotiation, error) {
	if req.RevokeContractID != "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "revoke a contract with POST /contracts/{id}/revoke").With("field", "revoke_contract_id")
	}
	cm.defaultRequest(&req, p.Endpoint)
	g := &Negotiation{cm: cm, peer: p, req: req,
		required: negotiate.RequiredSecurity(&req, cm.a.Identity().SystemID, p.SystemID, cm.cfg.MinSecurity())}
	var err error
	if g.payload, err = wire.NewJSONPayload(&g.req); err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "negotiate_request: %v", err)
	}
	return g, nil
}

// Attempts bounds the attempts of a negotiation (negotiation.timeout_ms
// and negotiation.retries; negotiate.Exchange runs them).
func (cm *Manager) Attempts() negotiate.Attempts { return cm.cfg.Attempts() }

// Next is the negotiate_request of the next attempt: fresh, and signed.
func (g *Negotiation) Next() (*wire.UnifiedSynapseMessage, error) {
	msg, err := g.cm.envelope(wire.MsgNegotiateRequest, g.peer.ID, "", "", g.payload)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "sign negotiate_request: %v", err)
	}
	return msg, nil
}

// Conclude checks the contract the peer answered with and stores it. A
// contract that breaks seed 002 §8.4.3 or is below the security this
// agent requires (the requested level, its minimum, high across systems
// and for consult) is refused and not stored.
func (g *Negotiation) Conclude(ctx context.Context) (*Info, error) {
	cm := g.cm
	if g.c == nil {
		return nil, wire.Errorf(wire.CodeInternal, "negotiation with %s concluded without an answer", g.peer.ID)
	}
	if err := negotiate.CheckContract(&g.req, g.c, g.required, cm.clock.Now()); err != nil {
		cm.log.Warn("contract refused", "peer", g.peer.ID, "err", err)
		return nil, err
	}
	rec, err := cm.save(ctx, g.peer.ID, RoleRequester, g.c, g.raw)
	if err != nil {
		return nil, err
	}
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

// Answered checks the peer's answer o to msg, one attempt's
// negotiate_request: a signed negotiate_response, whose contract it keeps
// for Conclude. Failures another attempt may cure wrap
// negotiate.ErrRetriable; the peer's refusals are returned as its
// TPError.
func (g *Negotiation) Answered(msg *wire.UnifiedSynapseMessage, o transport.Outcome) error {
	c, raw, err := g.answer(msg, o)
	if err != nil {
		g.cm.log.Debug("negotiation attempt failed", "peer", g.peer.ID, "err", err)
		return err
	}
	g.c, g.raw = c, raw
	return nil
}

func (g *Negotiation) answer(msg *wire.UnifiedSynapseMessage, o transport.Outcome) (*negotiate.Contract, []byte, error) {
	p := g.peer
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

// AutoFailure is how a failed automatic negotiation (one the network
// runs before a message that needs a contract, see the package doc) ends
// the delivery attempt of that message; nil when the peer does not
// negotiate at all, and the message goes without a contract. A peer that
// could not be reached, did not know this agent yet (401) or timed out
// (TP-NEG020) is Retry and Unreached; a refusal (TP-NEG003…006, a
// contract below what this agent requires) is Permanent with the refusal
// as its Error.
func AutoFailure(peerID string, err error) *transport.Outcome {
	if !peerNegotiates(err) {
		return nil
	}
	return negotiationFailed(peerID, err)
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
// sender then records the contract as revoked by the peer, negotiates a
// new one and sends the message again.
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
