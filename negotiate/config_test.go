package negotiate_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/negotiate"
)

// TestConfig: the zero Config is the documented defaults, Check names
// each bad field relative to the negotiation object, and Responder offers
// what the configuration says.
func TestConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		var c negotiate.Config
		if got := c.Attempts(); got != negotiate.DefaultAttempts {
			t.Errorf("Attempts() = %+v, want 30 s and 3 retries", got)
		}
		if got, want := c.EffectiveTiers(), negotiate.Tiers(); !slices.Equal(got, want) {
			t.Errorf("EffectiveTiers() = %v, want %v", got, want)
		}
		if got, want := c.EffectiveTransports(), []string{negotiate.NativeTP, negotiate.RESTAPI}; !slices.Equal(got, want) {
			t.Errorf("EffectiveTransports() = %v, want %v", got, want)
		}
		if c.ContractTTL() != 24*time.Hour || !c.ContractRequired() || c.MinSecurity() != negotiate.Basic || c.MaxSecurity() != negotiate.High {
			t.Errorf("ttl %v, require %v, security %s..%s", c.ContractTTL(), c.ContractRequired(), c.MinSecurity(), c.MaxSecurity())
		}
		if got := (&negotiate.LLMConfig{}).Timeout(); got != time.Minute {
			t.Errorf("LLM timeout %v, want 1m", got)
		}
		var bad []string
		c.Check(func(field, format string, args ...any) { bad = append(bad, field+": "+fmt.Sprintf(format, args...)) })
		if len(bad) > 0 {
			t.Errorf("the zero Config is refused: %v", bad)
		}
	})
	four, minus := 4, -1
	for _, tc := range []struct {
		field string
		mod   func(*negotiate.Config)
	}{
		{"tiers[0]", func(c *negotiate.Config) { c.Tiers = []string{"tier_4"} }},
		{"transports[1]", func(c *negotiate.Config) { c.Transports = []string{"rest_api", "carrier_pigeon"} }},
		{"min_security_level", func(c *negotiate.Config) { c.MinSecurityLevel = "medium" }},
		{"max_security_level", func(c *negotiate.Config) { c.MinSecurityLevel, c.MaxSecurityLevel = "high", "standard" }},
		{"contract_ttl_seconds", func(c *negotiate.Config) { c.ContractTTLSeconds = 86401 }},
		{"timeout_ms", func(c *negotiate.Config) { c.TimeoutMS = 30001 }},
		{"retries", func(c *negotiate.Config) { c.Retries = &four }},
		{"retries", func(c *negotiate.Config) { c.Retries = &minus }},
		{"private_fields", func(c *negotiate.Config) { c.PrivateFields = map[string][]string{"claim": {"a b"}} }},
		{"llm.url", func(c *negotiate.Config) { c.LLM = &negotiate.LLMConfig{URL: "127.0.0.1:8081", Model: "m"} }},
		{"llm.model", func(c *negotiate.Config) { c.LLM = &negotiate.LLMConfig{URL: "http://127.0.0.1:8081/v1"} }},
		{"llm.timeout_seconds", func(c *negotiate.Config) {
			c.LLM = &negotiate.LLMConfig{URL: "http://127.0.0.1:8081/v1", Model: "m", TimeoutSeconds: -1}
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			var c negotiate.Config
			tc.mod(&c)
			var bad []string
			c.Check(func(field, _ string, _ ...any) { bad = append(bad, field) })
			if !slices.Equal(bad, []string{tc.field}) {
				t.Errorf("Check named %v, want [%s]", bad, tc.field)
			}
		})
	}
	t.Run("file", func(t *testing.T) {
		var c negotiate.Config
		raw := `{"tiers": ["tier_3_natural_language"], "transports": ["a2a_jsonrpc"], "min_security_level": "standard",
			"contract_ttl_seconds": 600, "timeout_ms": 500, "retries": 0, "require_contract": false,
			"private_fields": {"claim": ["ssn"]},
			"llm": {"url": "http://127.0.0.1:8081/v1", "model": "tiny", "api_key_env": "TEST_LLM_KEY", "api_key": "from-the-file"}}`
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatal(err)
		}
		if c.LLM.APIKey != "" {
			t.Fatalf("the API key was read from the file: %q", c.LLM.APIKey)
		}
		c.LLM.APIKey = "secret-key" // what the command reads from api_key_env (cli/config)
		if c.LLM.APIKey != "secret-key" || c.Attempts() != (negotiate.Attempts{Timeout: 500 * time.Millisecond, Retries: 0}) ||
			c.ContractTTL() != 10*time.Minute || c.ContractRequired() || c.MinSecurity() != negotiate.Standard {
			t.Errorf("loaded %+v (llm %+v)", c, c.LLM)
		}
		r := c.Responder("agent-a", "plant-a", "http://127.0.0.1:9001")
		if r.AgentID != "agent-a" || r.SystemID != "plant-a" || r.Endpoint != "http://127.0.0.1:9001" ||
			!slices.Equal(r.Transports, []string{negotiate.A2AJSONRPC}) || !slices.Equal(r.Tiers, []negotiate.Tier{negotiate.Tier3}) ||
			!r.LLM || r.MinSecurity != negotiate.Standard || r.MaxSecurity != negotiate.High || r.TTL != 10*time.Minute ||
			r.PrivateFields["claim"][0] != "ssn" {
			t.Errorf("Responder() = %+v", r)
		}
	})
}
