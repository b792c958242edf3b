package negotiate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Responder is what the answering agent can do.
type Responder struct {
	AgentID  string
	SystemID string
	// Endpoint fills a selected transport that names none.
	Endpoint string
	// Transports are the protocols served (NativeTP, RESTAPI).
	Transports []string
	// Tiers are the tiers enabled; tier 3 is served even when not listed.
	Tiers []Tier
	// LLM tells whether an LLM backend is configured (tier 2).
	LLM bool
	// Routine returns a tier-1 routine by capability_id.
	Routine func(capabilityID string) (CapabilityRef, bool)
	// MinSecurity is the least this agent agrees to (default basic);
	// MaxSecurity the most it can provide (default high).
	MinSecurity, MaxSecurity SecurityLevel
	// PrivateFields are this agent's private fields per task type.
	PrivateFields map[string][]string
	// TTL is how long contracts last, at most MaxContractTTL (the default).
	TTL time.Duration
	// Routines is the number of tier-1 routines (tier 1 of tp_full).
	Routines int
	// Compliant tells whether every basic standard interface is
	// implemented (seed 000 §5.4; tp_core).
	Compliant bool
}

// Input is one negotiate_request as the responder received it.
type Input struct {
	Request *Request
	// Requester and RequesterSystem are the sender as paired (its pinned
	// agent_id and system_id, not the envelope's unsigned sender fields).
	Requester, RequesterSystem string
	// RequestTime is the request envelope's timestamp, for the trace.
	RequestTime string
	Now         time.Time
	// ContractID is the id the contract gets (a fresh UUID v7).
	ContractID string
}

// RequiredSecurity is the least level a contract between these two systems
// for this request may have: the requested level, the local minimum, and
// high across systems or for goal_type consult.
func RequiredSecurity(req *Request, localSystem, peerSystem string, min SecurityLevel) SecurityLevel {
	l := req.Security().Max(min)
	if localSystem != peerSystem || req.GoalType == GoalConsult {
		l = High
	}
	return l
}

// maxFieldName bounds a private field name; maxPrivate the names per
// request.
const (
	maxFieldName = 128
	maxPrivate   = 256
)

// CheckRequest refuses what no decision can use: TP-NEG001, TP-NEG002, an
// unknown security level, malformed private fields.
func CheckRequest(req *Request) *Rejection {
	switch {
	case len(req.CandidateTransports) == 0:
		return reject(wire.CodeNegNoTransports, ReasonNoTransports, nil, "")
	case len(req.CandidateTiers) == 0:
		return reject(wire.CodeNegNoTiers, ReasonNoTiers, nil, "")
	case req.PreferredSecurityLevel != "" && !req.PreferredSecurityLevel.Known():
		return reject(wire.CodeInvalidParams, "invalid_security_level", nil,
			"preferred_security_level %q is not basic, standard or high", req.PreferredSecurityLevel)
	}
	n := 0
	for tt, fs := range req.PrivateFields {
		for _, f := range append([]string{tt}, fs...) {
			n++
			if f == "" || len(f) > maxFieldName || strings.ContainsFunc(f, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '"' }) {
				return reject(wire.CodeInvalidParams, "invalid_private_fields", nil,
					"private_fields: %q must be 1 to %d bytes without spaces, quotes or control characters", f, maxFieldName)
			}
		}
	}
	if n > maxPrivate {
		return reject(wire.CodeInvalidParams, "invalid_private_fields", nil, "private_fields names more than %d fields", maxPrivate)
	}
	return checkProfile(req)
}

// Decide answers a negotiate_request: the contract, or why not. Checks in
// order: CheckRequest, the transport (TP-NEG003), the required profile
// (TP-NEG003 to TP-NEG006, see Profile), the security level (TP-NEG004),
// the tier (TP-NEG005, TP-NEG006, TP-NEG003).
func Decide(in Input, r Responder) (*Contract, *Rejection) {
	req := in.Request
	if rej := CheckRequest(req); rej != nil {
		return nil, rej
	}
	transport, ok := pickTransport(req.CandidateTransports, r.Transports)
	if !ok {
		return nil, reject(wire.CodeNegNoCommonTransp, ReasonNoCommonTransport,
			&Proposal{CandidateTransports: r.offer()},
			"none of the candidate transports is served here (this agent serves %s)", strings.Join(r.Transports, ", "))
	}
	if transport.Endpoint == "" {
		transport.Endpoint = r.Endpoint
	}
	if rej := r.meets(req.RequiredProfile); rej != nil {
		rej.AlternativeProposal.CandidateTransports = []Transport{transport}
		return nil, rej
	}
	if transport.Version == "" {
		transport.Version = wire.ProtocolVersion
	}
	maxLevel := r.MaxSecurity
	if maxLevel == "" {
		maxLevel = High
	}
	level := RequiredSecurity(req, r.SystemID, in.RequesterSystem, r.MinSecurity)
	if !maxLevel.AtLeast(level) {
		rej := reject(wire.CodeNegSecurity, ReasonSecurity, nil,
			"security level %s is required here and this agent provides at most %s; a lower level is never chosen implicitly", level, maxLevel)
		rej.MaxSecurityLevel = maxLevel
		return nil, rej
	}
	tier, capRef, notes, rej := r.pickTier(req)
	if rej != nil {
		if rej.AlternativeProposal != nil {
			rej.AlternativeProposal.CandidateTransports = []Transport{transport}
		}
		return nil, rej
	}
	ttl := r.TTL
	if ttl <= 0 || ttl > MaxContractTTL {
		ttl = MaxContractTTL
	}
	now := in.Now.UTC()
	reqTime := in.RequestTime
	if reqTime == "" {
		reqTime = wire.FormatTimestamp(now)
	}
	if level != req.Security() {
		notes = append(notes, fmt.Sprintf("security raised from %s to %s", req.Security(), level))
	}
	sel := transport
	c := &Contract{
		ContractID:         in.ContractID,
		TransportMethod:    transport,
		CommunicationTier:  tier,
		SecurityLevel:      level,
		ContractExpiration: wire.FormatTimestamp(now.Add(ttl)),
		NegotiationTrace: []Step{
			{Step: 1, InitiatorFayID: in.Requester, InitiatorAgentID: in.Requester, Proposed: slices.Clone(req.CandidateTransports),
				ProposedTiers: slices.Clone(req.CandidateTiers), SecurityLevel: req.Security(), Timestamp: reqTime},
			{Step: 2, InitiatorFayID: r.AgentID, InitiatorAgentID: r.AgentID, Proposed: []Transport{}, Selected: &sel,
				SelectedTier: tier, SecurityLevel: level, Timestamp: wire.FormatTimestamp(now), Note: strings.Join(notes, "; ")},
		},
		Capability: capRef,
	}
	if level.AtLeast(Standard) {
		c.PrivateFields = mergeFields(req.PrivateFields, r.PrivateFields)
	}
	return c, nil
}

// pickTransport is the first candidate whose protocol is served.
func pickTransport(cands []Transport, served []string) (Transport, bool) {
	for _, c := range cands {
		if slices.Contains(served, c.Protocol) {
			return c, true
		}
	}
	return Transport{}, false
}

// offer is the responder's transports as an alternative proposal.
func (r *Responder) offer() []Transport {
	out := make([]Transport, 0, len(r.Transports))
	for _, p := range r.Transports {
		out = append(out, Transport{Protocol: p, Endpoint: EndpointFor(p, r.Endpoint), Version: wire.ProtocolVersion})
	}
	return out
}

// serves reports whether tier t is enabled (tier 3 always is).
func (r *Responder) enabled(t Tier) bool { return t == Tier3 || slices.Contains(r.Tiers, t) }

// servable lists the tiers this responder can serve, highest first.
func (r *Responder) servable() []Tier {
	var out []Tier
	for _, t := range Tiers() {
		if t == Tier1 || (t == Tier2 && !r.LLM) || !r.enabled(t) {
			continue // tier 1 depends on the routine asked for
		}
		out = append(out, t)
	}
	return out
}

// below lists the servable tiers lower than t.
func (r *Responder) below(t Tier) []Tier {
	var out []Tier
	for _, s := range r.servable() {
		if s.rank() > t.rank() {
			out = append(out, s)
		}
	}
	return out
}

// pickTier is the highest candidate tier that can be served.
func (r *Responder) pickTier(req *Request) (Tier, *CapabilityRef, []string, *Rejection) {
	var cands []Tier
	for _, t := range req.CandidateTiers {
		if t.Known() && !slices.Contains(cands, t) {
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 {
		return "", nil, nil, reject(wire.CodeNegNoCommonTransp, ReasonNoCommonTier, &Proposal{CandidateTiers: r.servable()},
			"none of the candidate tiers is known here")
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].rank() < cands[j].rank() })
	var notes []string
	var last *Rejection
	for _, t := range cands {
		switch t {
		case Tier1:
			ref, why := r.tier1(req.Capability)
			if why == "" {
				return Tier1, ref, notes, nil
			}
			notes = append(notes, "tier_1_standardized not served: "+why)
			last = reject(wire.CodeNegTier1Mismatch, ReasonTier1Mismatch, &Proposal{CandidateTiers: r.below(Tier1)}, "tier 1 needs the same routine on both sides: %s", why)
		case Tier2:
			if r.enabled(Tier2) && r.LLM {
				return Tier2, nil, notes, nil
			}
			notes = append(notes, "tier_2_ai_generated not served: no LLM backend")
			last = reject(wire.CodeNegNoLLM, ReasonNoLLM, &Proposal{CandidateTiers: r.below(Tier2)}, "tier 2 needs an LLM backend and this agent has none")
		case Tier3:
			return Tier3, nil, notes, nil
		}
	}
	return "", nil, nil, last
}

// tier1 matches the requested routine; why is empty when it does.
func (r *Responder) tier1(want *CapabilityRef) (*CapabilityRef, string) {
	switch {
	case !r.enabled(Tier1):
		return nil, "tier 1 is disabled here"
	case want == nil || want.CapabilityID == "":
		return nil, "the request names no capability"
	case r.Routine == nil:
		return nil, "no tier-1 routines here"
	}
	have, ok := r.Routine(want.CapabilityID)
	switch {
	case !ok:
		return nil, fmt.Sprintf("no routine %q here", want.CapabilityID)
	case have.Version != want.Version:
		return nil, fmt.Sprintf("routine %s is version %s here, %s asked", want.CapabilityID, have.Version, want.Version)
	case have.DescriptorHash != want.DescriptorHash:
		return nil, fmt.Sprintf("routine %s %s has descriptor hash %s here, %s asked", want.CapabilityID, want.Version, have.DescriptorHash, want.DescriptorHash)
	}
	return &have, ""
}

// mergeFields is the union of two private-field maps, each list sorted;
// nil when both are empty.
func mergeFields(a, b map[string][]string) map[string][]string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, m := range []map[string][]string{a, b} {
		for tt, fs := range m {
			for _, f := range fs {
				if !slices.Contains(out[tt], f) {
					out[tt] = append(out[tt], f)
				}
			}
		}
	}
	for tt := range out {
		slices.Sort(out[tt])
	}
	return out
}
