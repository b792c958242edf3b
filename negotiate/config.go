package negotiate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/transport"
)

// Config is what an agent offers in negotiations and how it negotiates
// (the "negotiation" object of the agent's configuration): the tiers and
// transports it serves, its security levels, how long its contracts last,
// the client rule, its private fields and the LLM backend of tiers 2 and
// 3. Every zero value means its default.
type Config struct {
	// Tiers enabled; default all three. Tier 3 is served even when not
	// listed; tier 2 also needs llm.
	Tiers []string `json:"tiers,omitempty"`
	// Transports served; default native_tp and rest_api; a2a_jsonrpc (the
	// A2A binding at /a2a) when listed.
	Transports []string `json:"transports,omitempty"`
	// MinSecurityLevel is the least this agent agrees to; default basic.
	MinSecurityLevel string `json:"min_security_level,omitempty"`
	// MaxSecurityLevel is the most it offers; default high. Lower it only
	// to refuse encryption (TP-NEG004 for requests that need more).
	MaxSecurityLevel string `json:"max_security_level,omitempty"`
	// ContractTTLSeconds is how long contracts made here last; default
	// and maximum 86400 (24 h).
	ContractTTLSeconds int `json:"contract_ttl_seconds,omitempty"`
	// RequireContract refuses messages without an active contract
	// (TP-NEG010, seed 002 §8.3.4); default true. false lets peers of the
	// same system that never negotiated send without one; peers of another
	// system, and those that negotiated before, always need one.
	RequireContract *bool `json:"require_contract,omitempty"`
	// TimeoutMS bounds one negotiation attempt; default and maximum 30000.
	TimeoutMS int `json:"timeout_ms,omitempty"`
	// Retries after a failed attempt; default and maximum 3.
	Retries *int `json:"retries,omitempty"`
	// PrivateFields names, per task type, the top-level payload fields
	// encrypted one by one under the standard level.
	PrivateFields map[string][]string `json:"private_fields,omitempty"`
	// LLM is the OpenAI-compatible backend of tiers 2 and 3; without it
	// tier 2 is refused (TP-NEG006) and tier-3 text goes to a person.
	LLM *LLMConfig `json:"llm,omitempty"`
}

// LLMConfig names an OpenAI-compatible chat-completions server.
type LLMConfig struct {
	// URL is the API base, e.g. http://127.0.0.1:8081/v1.
	URL   string `json:"url"`
	Model string `json:"model"`
	// APIKeyEnv names the environment variable holding the API key (none:
	// no Authorization header).
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// APIKey is read from APIKeyEnv at start; never from the file.
	APIKey string `json:"-"`
	// TimeoutSeconds bounds one completion; default 60.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// EffectiveTiers is Tiers or all three.
func (c Config) EffectiveTiers() []Tier {
	if len(c.Tiers) == 0 {
		return Tiers()
	}
	out := make([]Tier, len(c.Tiers))
	for i, t := range c.Tiers {
		out[i] = Tier(t)
	}
	return out
}

// EffectiveTransports is Transports or native_tp and rest_api.
func (c Config) EffectiveTransports() []string {
	if len(c.Transports) == 0 {
		return []string{NativeTP, RESTAPI}
	}
	return slices.Clone(c.Transports)
}

// MinSecurity is min_security_level (default basic).
func (c Config) MinSecurity() SecurityLevel { return levelOr(c.MinSecurityLevel, Basic) }

// MaxSecurity is max_security_level (default high).
func (c Config) MaxSecurity() SecurityLevel { return levelOr(c.MaxSecurityLevel, High) }

func levelOr(s string, def SecurityLevel) SecurityLevel {
	if s == "" {
		return def
	}
	return SecurityLevel(s)
}

// ContractRequired is require_contract (default true).
func (c Config) ContractRequired() bool {
	return c.RequireContract == nil || *c.RequireContract
}

// ContractTTL is contract_ttl_seconds as a duration (default 24 h).
func (c Config) ContractTTL() time.Duration {
	if c.ContractTTLSeconds <= 0 {
		return MaxContractTTL
	}
	return time.Duration(c.ContractTTLSeconds) * time.Second
}

// Attempts is the client rule: timeout_ms and retries.
func (c Config) Attempts() Attempts {
	a := DefaultAttempts
	if c.TimeoutMS > 0 {
		a.Timeout = time.Duration(c.TimeoutMS) * time.Millisecond
	}
	if c.Retries != nil {
		a.Retries = *c.Retries
	}
	return a
}

// Responder is what an agent with this configuration offers: every field
// but those that depend on the agent's tier-1 routines and interfaces
// (Routine, Routines, Compliant), which the caller sets.
func (c Config) Responder(agentID, systemID, endpoint string) Responder {
	return Responder{
		AgentID: agentID, SystemID: systemID, Endpoint: endpoint,
		Transports:    c.EffectiveTransports(),
		Tiers:         c.EffectiveTiers(),
		LLM:           c.LLM != nil,
		MinSecurity:   c.MinSecurity(),
		MaxSecurity:   c.MaxSecurity(),
		PrivateFields: c.PrivateFields,
		TTL:           c.ContractTTL(),
	}
}

// Timeout bounds one completion (default 60 s).
func (l *LLMConfig) Timeout() time.Duration {
	if l.TimeoutSeconds <= 0 {
		return time.Minute
	}
	return time.Duration(l.TimeoutSeconds) * time.Second
}

// Client is the chat-completions client of the backend l names, sending
// through t; nil when l is nil (no backend configured).
func (l *LLMConfig) Client(t transport.Transport) *LLM {
	if l == nil {
		return nil
	}
	return &LLM{URL: l.URL, Model: l.Model, APIKey: l.APIKey, Transport: t, Timeout: l.Timeout()}
}

// Check reports every bad field through bad, named relative to the
// negotiation object ("tiers[0]", "llm.url").
func (c Config) Check(bad func(field, format string, args ...any)) {
	for i, t := range c.Tiers {
		if !Tier(t).Known() {
			bad(fmt.Sprintf("tiers[%d]", i), "%q is not one of %v", t, Tiers())
		}
	}
	for i, p := range c.Transports {
		switch p {
		case NativeTP, RESTAPI, A2AJSONRPC:
		default:
			bad(fmt.Sprintf("transports[%d]", i), "%q is not native_tp, rest_api or a2a_jsonrpc", p)
		}
	}
	minL, maxL := c.MinSecurity(), c.MaxSecurity()
	switch {
	case !minL.Known():
		bad("min_security_level", "%q is not basic, standard or high", c.MinSecurityLevel)
	case !maxL.Known():
		bad("max_security_level", "%q is not basic, standard or high", c.MaxSecurityLevel)
	case !maxL.AtLeast(minL):
		bad("max_security_level", "%s is below min_security_level %s", maxL, minL)
	}
	if c.ContractTTLSeconds < 0 || c.ContractTTLSeconds > int(MaxContractTTL/time.Second) {
		bad("contract_ttl_seconds", "%d is outside 1..86400", c.ContractTTLSeconds)
	}
	if c.TimeoutMS < 0 || c.TimeoutMS > int(MaxTimeout/time.Millisecond) {
		bad("timeout_ms", "%d is outside 1..30000", c.TimeoutMS)
	}
	if c.Retries != nil && (*c.Retries < 0 || *c.Retries > MaxRetries) {
		bad("retries", "%d is outside 0..3", *c.Retries)
	}
	if rej := CheckRequest(&Request{CandidateTransports: []Transport{{}}, CandidateTiers: []Tier{Tier3},
		PrivateFields: c.PrivateFields}); rej != nil {
		bad("private_fields", "%s", rej.Message)
	}
	if l := c.LLM; l != nil {
		if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") {
			bad("llm.url", "%q must be an http:// or https:// URL", l.URL)
		}
		if l.Model == "" {
			bad("llm.model", "must not be empty")
		}
		if l.TimeoutSeconds < 0 {
			bad("llm.timeout_seconds", "must not be negative")
		}
	}
}
