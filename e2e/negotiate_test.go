package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// TestNegotiationBetweenProcesses runs the refusals of seed 002 (each
// TP-NEG code that can arise between two agents, with its HTTP status) and
// a contract made, kept and revoked on both sides, between agent
// processes.
func TestNegotiationBetweenProcesses(t *testing.T) {
	dir := t.TempDir()
	std := filepath.Join(dir, "standard.json")
	writeJSON(t, std, map[string]any{"negotiation": map[string]any{"max_security_level": "standard"}})
	a := startAgent(t, agentOpts{})
	b := startAgent(t, agentOpts{})
	c := startAgent(t, agentOpts{args: []string{"--config", std}})
	for _, x := range [][2]*agentProc{{a, b}, {b, a}, {a, c}, {c, a}} {
		if r := x[0].call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+x[1].url()+`"}`)); r.status != http.StatusCreated {
			t.Fatalf("pair: %s", r)
		}
	}
	bID, _ := identityOf(t, b)
	cID, _ := identityOf(t, c)
	negotiate := func(peer, extra string) response {
		body := `{"peer":"` + peer + `"`
		if extra != "" {
			body += "," + extra
		}
		return a.call(http.MethodPost, prefix+"/negotiate", []byte(body+"}"))
	}
	errCode := func(r response) string {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(r.body, &e)
		return e.Error.Code
	}
	for _, tc := range []struct {
		name, peer, extra string
		status            int
		code              string
	}{
		{"empty transports", bID, `"candidate_transports":[]`, http.StatusBadRequest, "TP-NEG001"},
		{"empty tiers", bID, `"candidate_tiers":[]`, http.StatusBadRequest, "TP-NEG002"},
		{"no common transport", bID, `"candidate_transports":[{"protocol":"a2a_jsonrpc"}]`, http.StatusConflict, "TP-NEG003"},
		{"security not met, never lowered", cID, `"preferred_security_level":"high"`, http.StatusConflict, "TP-NEG004"},
		{"tier 1 descriptors differ", bID, `"candidate_tiers":["tier_1_standardized"],"capability":{"capability_id":"synapse.telemetry","version":"9.9.9","descriptor_hash":"sha256:00"}`, http.StatusConflict, "TP-NEG005"},
		{"tier 2 without an LLM", bID, `"candidate_tiers":["tier_2_ai_generated"]`, http.StatusConflict, "TP-NEG006"},
		{"tp_secure required of a tp_core agent (no LLM)", bID, `"required_profile":"tp_secure"`, http.StatusConflict, "TP-NEG006"},
		{"an unknown profile", bID, `"required_profile":"tp_max"`, http.StatusBadRequest, "invalid_params"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := negotiate(tc.peer, tc.extra)
			if r.status != tc.status || errCode(r) != tc.code {
				t.Errorf("%d %s, want %d %s: %s", r.status, errCode(r), tc.status, tc.code, r)
			}
		})
	}
	t.Run("capabilities declare the profile", func(t *testing.T) {
		// No LLM backend: tier 3 only, tp_core (seed 002 §8.2.4).
		r := b.call(http.MethodGet, prefix+"/capabilities", nil)
		var c struct {
			ProtocolProfile string `json:"protocol_profile"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &c) != nil || c.ProtocolProfile != "tp_core" {
			t.Errorf("GET /capabilities: %s, want protocol_profile tp_core", r)
		}
	})
	t.Run("a contract on both sides, then revoked on both", func(t *testing.T) {
		r := negotiate(bID, `"preferred_security_level":"standard"`)
		var made struct {
			Contract struct {
				ContractID    string `json:"contract_id"`
				SecurityLevel string `json:"security_level"`
			} `json:"contract"`
		}
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &made) != nil || made.Contract.ContractID == "" {
			t.Fatalf("negotiate: %s", r)
		}
		id := made.Contract.ContractID
		for _, x := range []*agentProc{a, b} {
			if r := x.call(http.MethodGet, prefix+"/contracts/"+id, nil); r.status != http.StatusOK {
				t.Errorf("GET /contracts/%s on %s: %s", id, x.url(), r)
			}
		}
		if r := a.call(http.MethodPost, prefix+"/contracts/"+id+"/revoke", nil); r.status != http.StatusOK {
			t.Fatalf("revoke: %s", r)
		}
		testutil.Eventually(t, requestTimeout, "the revocation on B", func() bool {
			r := b.call(http.MethodGet, prefix+"/contracts/"+id, nil)
			var ci struct {
				Revoked   bool   `json:"revoked"`
				RevokedAt string `json:"revoked_at"`
				Status    string `json:"status"`
			}
			_ = json.Unmarshal(r.body, &ci)
			return ci.Revoked || ci.RevokedAt != "" || ci.Status == "revoked"
		})
		if r := a.call(http.MethodGet, prefix+"/contracts/no-such-contract", nil); errCode(r) != "TP-NEG011" {
			t.Errorf("unknown contract: %s, want TP-NEG011", r)
		}
	})
}
