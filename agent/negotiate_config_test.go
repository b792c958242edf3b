package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/negotiate"
)

func TestNegotiationConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		n := agent.Defaults().Negotiation
		if got := n.Attempts(); got != negotiate.DefaultAttempts {
			t.Errorf("Attempts() = %+v, want 30 s and 3 retries", got)
		}
		if n.ContractTTL() != 24*time.Hour || len(n.EffectiveTiers()) != 3 ||
			strings.Join(n.EffectiveTransports(), ",") != "native_tp,rest_api" {
			t.Errorf("defaults: ttl %v tiers %v transports %v", n.ContractTTL(), n.EffectiveTiers(), n.EffectiveTransports())
		}
	})
	zero := 0
	four := 4
	for _, tc := range []struct {
		field string
		mod   func(*negotiate.Config)
	}{
		{"negotiation.tiers[0]", func(n *negotiate.Config) { n.Tiers = []string{"tier_4"} }},
		{"negotiation.transports[0]", func(n *negotiate.Config) { n.Transports = []string{"a2a"} }},
		{"negotiation.transports[1]", func(n *negotiate.Config) { n.Transports = []string{"rest_api", "carrier_pigeon"} }},
		{"negotiation.min_security_level", func(n *negotiate.Config) { n.MinSecurityLevel = "medium" }},
		{"negotiation.max_security_level", func(n *negotiate.Config) { n.MaxSecurityLevel = "extreme" }},
		{"negotiation.max_security_level", func(n *negotiate.Config) { n.MinSecurityLevel, n.MaxSecurityLevel = "high", "standard" }},
		{"negotiation.contract_ttl_seconds", func(n *negotiate.Config) { n.ContractTTLSeconds = 86401 }},
		{"negotiation.timeout_ms", func(n *negotiate.Config) { n.TimeoutMS = 30001 }},
		{"negotiation.retries", func(n *negotiate.Config) { n.Retries = &four }},
		{"negotiation.private_fields", func(n *negotiate.Config) { n.PrivateFields = map[string][]string{"claim": {"a b"}} }},
		{"negotiation.llm.url", func(n *negotiate.Config) { n.LLM = &negotiate.LLMConfig{URL: "127.0.0.1:8081", Model: "m"} }},
		{"negotiation.llm.model", func(n *negotiate.Config) { n.LLM = &negotiate.LLMConfig{URL: "http://127.0.0.1:8081/v1"} }},
	} {
		t.Run(tc.field, func(t *testing.T) {
			cfg := agent.Defaults()
			tc.mod(&cfg.Negotiation)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), "config: "+tc.field+":") {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	t.Run("file and environment", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.json")
		raw := `{"negotiation": {"tiers": ["tier_3_natural_language"], "transports": ["rest_api"], "min_security_level": "standard",
			"contract_ttl_seconds": 600, "timeout_ms": 500, "retries": 0, "require_contract": false,
			"private_fields": {"claim": ["ssn"]},
			"llm": {"url": "http://127.0.0.1:8081/v1", "model": "tiny", "api_key_env": "TEST_LLM_KEY"}}}`
		if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := agent.Defaults()
		if err := cfg.LoadFile(path); err != nil {
			t.Fatal(err)
		}
		if err := cfg.LoadEnv(func(k string) string {
			if k == "TEST_LLM_KEY" {
				return "secret-key"
			}
			return ""
		}); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		n := cfg.Negotiation
		if n.LLM == nil || n.LLM.APIKey != "secret-key" || n.Attempts() != (negotiate.Attempts{Timeout: 500 * time.Millisecond, Retries: zero}) ||
			n.ContractTTL() != 10*time.Minute || n.ContractRequired() || n.PrivateFields["claim"][0] != "ssn" {
			t.Errorf("loaded %+v (llm %+v)", n, n.LLM)
		}
	})
}
