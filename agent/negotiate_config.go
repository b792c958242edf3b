package agent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/negotiate"
)

// NegotiationConfig configures protocol negotiation (seed 002, SPEC §7):
// what this agent offers, how long its contracts last, how it retries, and
// the LLM backend of tiers 2 and 3. Every zero value means its default.
type NegotiationConfig struct {
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

// EffectiveTiers is Tiers or all three, as negotiate tiers.
func (c NegotiationConfig) EffectiveTiers() []negotiate.Tier {
	if len(c.Tiers) == 0 {
		return negotiate.Tiers()
	}
	out := make([]negotiate.Tier, len(c.Tiers))
	for i, t := range c.Tiers {
		out[i] = negotiate.Tier(t)
	}
	return out
}

// EffectiveTransports is Transports or native_tp and rest_api.
func (c NegotiationConfig) EffectiveTransports() []string {
	if len(c.Transports) == 0 {
		return []string{negotiate.NativeTP, negotiate.RESTAPI}
	}
	return slices.Clone(c.Transports)
}

func levelOr(s string, def negotiate.SecurityLevel) negotiate.SecurityLevel {
	if s == "" {
		return def
	}
	return negotiate.SecurityLevel(s)
}

// ContractRequired is require_contract (default true).
func (c NegotiationConfig) ContractRequired() bool {
	return c.RequireContract == nil || *c.RequireContract
}

// ContractTTL is contract_ttl_seconds as a duration (default 24 h).
func (c NegotiationConfig) ContractTTL() time.Duration {
	if c.ContractTTLSeconds <= 0 {
		return negotiate.MaxContractTTL
	}
	return time.Duration(c.ContractTTLSeconds) * time.Second
}

// Attempts is the client rule: timeout_ms and retries.
func (c NegotiationConfig) Attempts() negotiate.Attempts {
	a := negotiate.DefaultAttempts
	if c.TimeoutMS > 0 {
		a.Timeout = time.Duration(c.TimeoutMS) * time.Millisecond
	}
	if c.Retries != nil {
		a.Retries = *c.Retries
	}
	return a
}

// LLMTimeout bounds one completion.
func (l *LLMConfig) LLMTimeout() time.Duration {
	if l.TimeoutSeconds <= 0 {
		return time.Minute
	}
	return time.Duration(l.TimeoutSeconds) * time.Second
}

// check reports every bad field through bad.
func (c NegotiationConfig) check(bad func(field, format string, args ...any)) {
	for i, t := range c.Tiers {
		if !negotiate.Tier(t).Known() {
			bad(fmt.Sprintf("negotiation.tiers[%d]", i), "%q is not one of %v", t, negotiate.Tiers())
		}
	}
	for i, p := range c.Transports {
		switch p {
		case negotiate.NativeTP, negotiate.RESTAPI, negotiate.A2AJSONRPC:
		default:
			bad(fmt.Sprintf("negotiation.transports[%d]", i), "%q is not native_tp, rest_api or a2a_jsonrpc", p)
		}
	}
	minL, maxL := levelOr(c.MinSecurityLevel, negotiate.Basic), levelOr(c.MaxSecurityLevel, negotiate.High)
	switch {
	case !minL.Known():
		bad("negotiation.min_security_level", "%q is not basic, standard or high", c.MinSecurityLevel)
	case !maxL.Known():
		bad("negotiation.max_security_level", "%q is not basic, standard or high", c.MaxSecurityLevel)
	case !maxL.AtLeast(minL):
		bad("negotiation.max_security_level", "%s is below min_security_level %s", maxL, minL)
	}
	if c.ContractTTLSeconds < 0 || c.ContractTTLSeconds > int(negotiate.MaxContractTTL/time.Second) {
		bad("negotiation.contract_ttl_seconds", "%d is outside 1..86400", c.ContractTTLSeconds)
	}
	if c.TimeoutMS < 0 || c.TimeoutMS > int(negotiate.MaxTimeout/time.Millisecond) {
		bad("negotiation.timeout_ms", "%d is outside 1..30000", c.TimeoutMS)
	}
	if c.Retries != nil && (*c.Retries < 0 || *c.Retries > negotiate.MaxRetries) {
		bad("negotiation.retries", "%d is outside 0..3", *c.Retries)
	}
	if rej := negotiate.CheckRequest(&negotiate.Request{CandidateTransports: []negotiate.Transport{{}}, CandidateTiers: []negotiate.Tier{negotiate.Tier3},
		PrivateFields: c.PrivateFields}); rej != nil {
		bad("negotiation.private_fields", "%s", rej.Message)
	}
	if l := c.LLM; l != nil {
		if !strings.HasPrefix(l.URL, "http://") && !strings.HasPrefix(l.URL, "https://") {
			bad("negotiation.llm.url", "%q must be an http:// or https:// URL", l.URL)
		}
		if l.Model == "" {
			bad("negotiation.llm.model", "must not be empty")
		}
		if l.TimeoutSeconds < 0 {
			bad("negotiation.llm.timeout_seconds", "must not be negative")
		}
	}
}

// loadEnv reads the LLM API key from its variable.
func (c *NegotiationConfig) loadEnv(getenv func(string) string) {
	if c.LLM != nil && c.LLM.APIKeyEnv != "" {
		c.LLM.APIKey = getenv(c.LLM.APIKeyEnv)
	}
}
