package negotiate

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/wire"
)

// Limits of a decoded negotiation payload.
const (
	maxCandidates = 32
	maxTrace      = 64
	maxText       = 2048
)

// DecodeRequest reads a negotiate_request payload (either codec) and bounds
// its lists and strings. It does not decide anything: see CheckRequest and
// Decide.
func DecodeRequest(p wire.RawPayload) (*Request, error) {
	var r Request
	if err := p.Decode(&r); err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "negotiate_request payload: %v", err)
	}
	bad := func(format string, args ...any) error {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "negotiate_request payload: "+format, args...)
	}
	if len(r.CandidateTransports) > maxCandidates || len(r.CandidateTiers) > maxCandidates {
		return nil, bad("more than %d candidates", maxCandidates)
	}
	for _, t := range r.CandidateTransports {
		if len(t.Protocol)+len(t.Endpoint)+len(t.Version) > maxText {
			return nil, bad("a candidate transport is longer than %d bytes", maxText)
		}
	}
	for _, t := range r.CandidateTiers {
		if len(t) > maxText {
			return nil, bad("a candidate tier is longer than %d bytes", maxText)
		}
	}
	if len(r.SessionPurpose) > maxText || len(r.GoalType) > maxText || len(r.RevokeContractID) > maxText {
		return nil, bad("a field is longer than %d bytes", maxText)
	}
	for _, s := range []wire.JSONValue{r.InputSchema, r.OutputSchema} {
		if len(s) > 0 && !s.IsObject() {
			return nil, bad("input_schema and output_schema must be JSON objects")
		}
	}
	return &r, nil
}

// DecodeContract reads a negotiate_response payload (either codec).
// Validity is CheckContract's job.
func DecodeContract(p wire.RawPayload) (*Contract, error) {
	var c Contract
	if err := p.Decode(&c); err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "negotiate_response payload: %v", err)
	}
	if len(c.NegotiationTrace) > maxTrace {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "negotiate_response payload: more than %d trace steps", maxTrace)
	}
	return &c, nil
}

// Skew is how far the other agent's clock may be ahead when checking a
// contract's expiration (the replay window).
const Skew = wire.ReplayWindow

// CheckContract is the requester's check of a negotiate_response (seed
// 002 §8.4.3): a UUID v7 contract_id, a transport and a tier taken from
// the request, a security level at least required (TP-NEG004 otherwise),
// a trace, an expiration in the future and at most 24 h away (with Skew),
// and for tier 1 the routine that was asked for.
func CheckContract(req *Request, c *Contract, required SecurityLevel, now time.Time) error {
	bad := func(format string, args ...any) error {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "the contract: "+format, args...)
	}
	id, err := uuid.Parse(c.ContractID)
	if err != nil || id.Version() != 7 || len(c.ContractID) != 36 {
		return bad("contract_id %q is not a UUID v7", c.ContractID)
	}
	if !transportOffered(req.CandidateTransports, c.TransportMethod) {
		return bad("transport_method %s %s is not one of the candidate transports", c.TransportMethod.Protocol, c.TransportMethod.Endpoint)
	}
	if !c.CommunicationTier.Known() || !slices.Contains(req.CandidateTiers, c.CommunicationTier) {
		return bad("communication_tier %q is not one of the candidate tiers", c.CommunicationTier)
	}
	if !c.SecurityLevel.Known() {
		return bad("security_level %q is not basic, standard or high", c.SecurityLevel)
	}
	if !c.SecurityLevel.AtLeast(required) {
		return wire.Errorf(wire.CodeNegSecurity, "the contract's security level %s is below the %s required; refused", c.SecurityLevel, required).
			With("security_level", c.SecurityLevel).With("required", required)
	}
	if len(c.NegotiationTrace) == 0 {
		return bad("negotiation_trace is empty")
	}
	exp, err := c.Expires()
	switch {
	case err != nil || !isRFC3339(c.ContractExpiration):
		return bad("contract_expiration %q is not an RFC 3339 time", c.ContractExpiration)
	case !exp.After(now):
		return bad("contract_expiration %s has passed", c.ContractExpiration)
	case exp.Sub(now) > MaxContractTTL+Skew:
		return bad("contract_expiration %s is more than 24 h away", c.ContractExpiration)
	}
	if c.CommunicationTier == Tier1 && (req.Capability == nil || c.Capability == nil || *c.Capability != *req.Capability) {
		return bad("a tier-1 contract must name the routine that was asked for")
	}
	return nil
}

func transportOffered(cands []Transport, t Transport) bool {
	for _, c := range cands {
		if c.Protocol == t.Protocol && (c.Endpoint == "" || c.Endpoint == t.Endpoint) {
			return true
		}
	}
	return false
}

// isRFC3339 rejects the forms time.Parse accepts that RFC 3339 does not.
func isRFC3339(s string) bool {
	m := wire.UnifiedSynapseMessage{Timestamp: s}
	_, err := m.Time()
	return err == nil
}

// Status of a contract at a time.
const (
	StatusActive  = "active"
	StatusExpired = "expired"
	StatusRevoked = "revoked"
)

// StatusAt is active, expired or revoked.
func StatusAt(expires time.Time, revoked bool, now time.Time) string {
	switch {
	case revoked:
		return StatusRevoked
	case !now.Before(expires):
		return StatusExpired
	}
	return StatusActive
}

// String is a one-line description for logs.
func (c *Contract) String() string {
	return fmt.Sprintf("%s %s %s %s until %s", c.ContractID, c.CommunicationTier, c.TransportMethod.Protocol, c.SecurityLevel, c.ContractExpiration)
}
