package peercmd_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
)

// TestE2ENegotiate runs negotiate and contract list|show|revoke with the
// built binary against two paired agents.
func TestE2ENegotiate(t *testing.T) {
	a, b := clitest.P2PAgent(t, &synapseBin), clitest.P2PAgent(t, &synapseBin)
	idB := clitest.Identity(t, b)
	clitest.Must(t, a, "", "peer", "add", b.URL)
	clitest.Must(t, b, "", "peer", "add", a.URL)

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"negotiate"},
			{"negotiate", "--peer", idB.AgentID, "--tiers", "4"},
			{"negotiate", "--peer", idB.AgentID, "--security", "paranoid"},
			{"negotiate", "--peer", idB.AgentID, "--profile", "tp_max"},
		} {
			if code, _, errOut := clitest.At(t, a, "", args...); code != cli.ExitUsage {
				t.Errorf("%v: exit %d (%s), want usage", args, code, strings.TrimSpace(errOut))
			}
		}
	})
	t.Run("a refusal names its code", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "negotiate", "--peer", idB.AgentID, "--tiers", "2")
		if code != cli.ExitFailure || !strings.Contains(errOut, "TP-NEG006 (409)") {
			t.Errorf("exit %d, stderr %q; want 1 and TP-NEG006 (409)", code, errOut)
		}
		// b has no LLM backend: it is tp_core and lacks tier 2 for tp_secure.
		code, _, errOut = clitest.At(t, a, "", "negotiate", "--peer", idB.AgentID, "--profile", "tp_secure")
		if code != cli.ExitFailure || !strings.Contains(errOut, "TP-NEG006 (409)") || !strings.Contains(errOut, "tp_core") {
			t.Errorf("--profile tp_secure: exit %d, stderr %q; want 1, TP-NEG006 (409) and tp_core", code, errOut)
		}
	})

	c := clitest.Decode[client.Contract](t, clitest.Must(t, a, "", "negotiate", "--peer", idB.AgentID, "--tiers", "tier_2_ai_generated,3",
		"--transports", "rest_api,native_tp", "--security", "standard", "--json"))
	id := c.Contract.ContractID
	if c.Peer != idB.AgentID || c.Role != "requester" || c.Status != "active" || c.Contract.SecurityLevel != "standard" ||
		c.Contract.CommunicationTier != "tier_3_natural_language" || c.Contract.TransportMethod.Protocol != "rest_api" {
		t.Fatalf("negotiate --json = %+v", c)
	}
	t.Run("list and show", func(t *testing.T) {
		out := clitest.Must(t, a, "", "contract", "list")
		if !strings.HasPrefix(out, "CONTRACT ID") || !strings.Contains(out, id+"  "+idB.AgentID+"  requester") {
			t.Errorf("contract list lacks %s:\n%s", id, out)
		}
		out = clitest.Must(t, b, "", "contract", "show", id)
		for key, want := range map[string]string{"contract_id": id, "role": "responder", "security": "standard", "status": "active"} {
			if got := clitest.KVValue(t, out, key); got != want {
				t.Errorf("contract show on b: %s = %q, want %q\n%s", key, got, want, out)
			}
		}
	})
	t.Run("revoke", func(t *testing.T) {
		out := clitest.Must(t, a, "", "contract", "revoke", id)
		if got := clitest.KVValue(t, out, "status"); got != "revoked" {
			t.Errorf("contract revoke: status %q\n%s", got, out)
		}
		code, _, errOut := clitest.At(t, a, "", "contract", "show", "01902c4f-1a2b-7000-8000-00000000dead")
		if code != cli.ExitFailure || !strings.Contains(errOut, "TP-NEG011 (404)") {
			t.Errorf("show unknown: exit %d, stderr %q", code, errOut)
		}
	})
}
