package negotiate

import (
	"strings"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Tier is a communication tier (seed 002 §8.2).
type Tier string

// The three tiers, highest first.
const (
	Tier1 Tier = "tier_1_standardized"
	Tier2 Tier = "tier_2_ai_generated"
	Tier3 Tier = "tier_3_natural_language"
)

// Tiers lists the tiers, highest first.
func Tiers() []Tier { return []Tier{Tier1, Tier2, Tier3} }

// rank is 1 for tier 1 … 3 for tier 3, 0 for an unknown tier.
func (t Tier) rank() int {
	switch t {
	case Tier1:
		return 1
	case Tier2:
		return 2
	case Tier3:
		return 3
	}
	return 0
}

// Known reports whether t is one of the three tiers.
func (t Tier) Known() bool { return t.rank() != 0 }

// SecurityLevel is a contract's minimum security (seed 002 §8.3.2).
type SecurityLevel string

// The security levels, lowest first.
const (
	Basic    SecurityLevel = "basic"    // signed envelopes
	Standard SecurityLevel = "standard" // and private fields encrypted
	High     SecurityLevel = "high"     // and the whole payload encrypted
)

func (l SecurityLevel) rank() int {
	switch l {
	case Basic:
		return 1
	case Standard:
		return 2
	case High:
		return 3
	}
	return 0
}

// Known reports whether l is one of the three levels.
func (l SecurityLevel) Known() bool { return l.rank() != 0 }

// AtLeast reports whether l is o or stronger. An unknown level is weaker
// than every known one.
func (l SecurityLevel) AtLeast(o SecurityLevel) bool { return l.rank() >= o.rank() }

// Max is the stronger of l and o.
func (l SecurityLevel) Max(o SecurityLevel) SecurityLevel {
	if o.rank() > l.rank() {
		return o
	}
	return l
}

// Transport protocols (TP §9).
const (
	NativeTP   = "native_tp"
	RESTAPI    = "rest_api"
	A2AJSONRPC = "a2a_jsonrpc"
)

// A2APath is where an agent serves a2a_jsonrpc, under its endpoint.
const A2APath = "/a2a"

// EndpointFor is the endpoint of protocol at an agent whose base endpoint
// is base: a2a_jsonrpc is served at base + A2APath, the others at base.
func EndpointFor(protocol, base string) string {
	if protocol == A2AJSONRPC && base != "" {
		return strings.TrimRight(base, "/") + A2APath
	}
	return base
}

// GoalConsult is the goal_type that requires the high level.
const GoalConsult = "consult"

// MaxContractTTL is the longest a contract may last (seed 002 §8.3.1).
const MaxContractTTL = 24 * time.Hour

// Transport is a candidate transport, or the one a contract selected.
type Transport struct {
	Protocol string `json:"protocol"`
	Endpoint string `json:"endpoint,omitempty"`
	Version  string `json:"version,omitempty"`
}

// CapabilityRef names a tier-1 routine exactly: the descriptor hash is
// tier1's "sha256:<hex>" of its canonical JSON.
type CapabilityRef struct {
	CapabilityID   string `json:"capability_id"`
	Version        string `json:"version"`
	DescriptorHash string `json:"descriptor_hash"`
}

// Request is the negotiate_request payload (seed 002 §8.4.2) and this
// agent's optional additions.
type Request struct {
	// CandidateTransports in the requester's order of preference.
	CandidateTransports []Transport `json:"candidate_transports"`
	// CandidateTiers the requester accepts; the highest servable is chosen.
	CandidateTiers []Tier `json:"candidate_tiers"`
	// PreferredSecurityLevel is the least the requester accepts; absent
	// means basic.
	PreferredSecurityLevel SecurityLevel `json:"preferred_security_level,omitempty"`
	SessionPurpose         string        `json:"session_purpose,omitempty"`

	// GoalType consult makes the contract high (seed 002 §8.3.2).
	GoalType string `json:"goal_type,omitempty"`
	// Capability is the tier-1 routine the requester wants to use.
	Capability *CapabilityRef `json:"capability,omitempty"`
	// InputSchema and OutputSchema describe the interface the requester
	// wants for a tier-2 session (JSON Schema objects).
	InputSchema  wire.JSONValue `json:"input_schema,omitempty"`
	OutputSchema wire.JSONValue `json:"output_schema,omitempty"`
	// PrivateFields names, per task type, the payload fields the requester
	// wants encrypted under the standard level.
	PrivateFields map[string][]string `json:"private_fields,omitempty"`
	// RequiredProfile is the least protocol profile the responder must
	// meet (Profile); absent means none is required.
	RequiredProfile Profile `json:"required_profile,omitempty"`
	// RevokeContractID, when set, makes the request a revocation of that
	// contract (seed 002 §8.3.3): the other fields are ignored.
	RevokeContractID string `json:"revoke_contract_id,omitempty"`
}

// Security is the level the request asks for; when absent, the default
// of its required profile (basic without one).
func (r *Request) Security() SecurityLevel {
	if r.PreferredSecurityLevel == "" {
		return r.RequiredProfile.DefaultSecurity()
	}
	return r.PreferredSecurityLevel
}

// Step is one entry of a contract's negotiation_trace (seed 002 §8.5.2),
// with the tiers and level recorded next to the transports.
type Step struct {
	Step int `json:"step"`
	// InitiatorFayID is the seed's name of the field ("fay" is the seed's
	// identity system); it holds the agent_id of the agent that took the
	// step, as InitiatorAgentID does (the name this implementation reads).
	InitiatorFayID   string        `json:"initiator_fay_id"`
	InitiatorAgentID string        `json:"initiator_agent_id,omitempty"`
	Proposed         []Transport   `json:"proposed"`
	Selected         *Transport    `json:"selected"`
	ProposedTiers    []Tier        `json:"proposed_tiers,omitempty"`
	SelectedTier     Tier          `json:"selected_tier,omitempty"`
	SecurityLevel    SecurityLevel `json:"security_level,omitempty"`
	Timestamp        string        `json:"timestamp"`
	Note             string        `json:"note,omitempty"`
}

// Contract is a ProtocolContract (seed 002 §8.3), the negotiate_response
// payload. Frozen once made.
type Contract struct {
	ContractID         string        `json:"contract_id"`
	TransportMethod    Transport     `json:"transport_method"`
	CommunicationTier  Tier          `json:"communication_tier"`
	SecurityLevel      SecurityLevel `json:"security_level"`
	ContractExpiration string        `json:"contract_expiration"`
	NegotiationTrace   []Step        `json:"negotiation_trace"`

	// Capability is the tier-1 routine of a tier-1 contract.
	Capability *CapabilityRef `json:"capability,omitempty"`
	// SessionMapping is the tier-2 session of a tier-2 contract made from
	// input and output schemas.
	SessionMapping *Mapping `json:"session_mapping,omitempty"`
	// PrivateFields are the fields encrypted one by one under standard:
	// the requester's and the responder's, merged.
	PrivateFields map[string][]string `json:"private_fields,omitempty"`
}

// Expires parses contract_expiration.
func (c *Contract) Expires() (time.Time, error) {
	return time.Parse(time.RFC3339Nano, c.ContractExpiration)
}

// Proposal is an alternative_proposal: what the responder would accept.
type Proposal struct {
	CandidateTransports []Transport `json:"candidate_transports,omitempty"`
	CandidateTiers      []Tier      `json:"candidate_tiers,omitempty"`
}

// Reasons of a rejection.
const (
	ReasonNoTransports      = "no_candidate_transports"
	ReasonNoTiers           = "no_candidate_tiers"
	ReasonNoCommonTransport = "no_common_transport"
	ReasonNoCommonTier      = "no_common_tier"
	ReasonSecurity          = "security_level_unsatisfiable"
	ReasonTier1Mismatch     = "tier1_capability_mismatch"
	ReasonNoLLM             = "no_llm_backend"
	ReasonBadMapping        = "session_mapping_invalid"
)

// Rejection is a refused negotiation: a TP-NEG code and the seed's
// {"rejected", "reason", "alternative_proposal"} object.
type Rejection struct {
	Code                wire.ErrorCode `json:"-"`
	Message             string         `json:"-"`
	Rejected            bool           `json:"rejected"`
	Reason              string         `json:"reason"`
	AlternativeProposal *Proposal      `json:"alternative_proposal,omitempty"`
	// MaxSecurityLevel is, for TP-NEG004, the most the responder offers.
	MaxSecurityLevel SecurityLevel `json:"max_security_level,omitempty"`
	// Profile and Missing are, for a required profile not met, the
	// responder's profile and what it lacks.
	Profile Profile  `json:"profile,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

// Err is the rejection as a client-visible error; the seed's object is in
// its details.
func (r *Rejection) Err() *wire.Error {
	e := wire.Errorf(r.Code, "%s", r.Message).With("rejected", true).With("reason", r.Reason)
	if r.AlternativeProposal != nil {
		e = e.With("alternative_proposal", r.AlternativeProposal)
	}
	if r.MaxSecurityLevel != "" {
		e = e.With("max_security_level", r.MaxSecurityLevel)
	}
	if r.Reason == ReasonProfile {
		e = e.With("profile", r.Profile).With("missing", r.Missing)
	}
	return e
}

func reject(code wire.ErrorCode, reason string, alt *Proposal, format string, args ...any) *Rejection {
	r := &Rejection{Code: code, Rejected: true, Reason: reason, AlternativeProposal: alt}
	if format != "" {
		r.Message = wire.Errorf(code, format, args...).Message
	} else {
		r.Message = wire.Errorf(code, "").Message
	}
	return r
}
