package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// TestNegotiateAPI drives negotiation through the routes of two agents:
// every TP-NEG refusal comes back with its code and HTTP status, the
// contract is readable on both sides, and revocation reaches the peer.
func TestNegotiateAPI(t *testing.T) {
	a := startPeerServer(t, "requester")
	b := startPeerServer(t, "responder")
	noCrypto := startPeerServer(t, "no-crypto", func(c *agent.Config) { c.Negotiation.MaxSecurityLevel = "standard" })
	for _, p := range []*testServer{b, noCrypto} {
		a.pairWith(t, p)
		p.pairWith(t, a)
	}
	bID := b.a.Identity().AgentID
	negotiateBody := func(peer, extra string) []byte {
		s := `{"peer":"` + peer + `"`
		if extra != "" {
			s += "," + extra
		}
		return []byte(s + "}")
	}

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct {
			name, peer, extra string
			status            int
			code              wire.ErrorCode
			reason            string
		}{
			{"no peer", "", "", http.StatusBadRequest, wire.CodeInvalidParams, ""},
			{"unknown field", bID, `"security":"high"`, http.StatusBadRequest, wire.CodeInvalidParams, ""},
			{"unknown peer", "stranger", "", http.StatusNotFound, wire.CodeNotFound, ""},
			{"TP-NEG001", bID, `"candidate_transports":[]`, http.StatusBadRequest, wire.CodeNegNoTransports, negotiate.ReasonNoTransports},
			{"TP-NEG002", bID, `"candidate_tiers":[]`, http.StatusBadRequest, wire.CodeNegNoTiers, negotiate.ReasonNoTiers},
			{"TP-NEG003", bID, `"candidate_transports":[{"protocol":"a2a_jsonrpc"}]`, http.StatusConflict, wire.CodeNegNoCommonTransp, negotiate.ReasonNoCommonTransport},
			{"TP-NEG004", noCrypto.a.Identity().AgentID, `"preferred_security_level":"high"`, http.StatusConflict, wire.CodeNegSecurity, negotiate.ReasonSecurity},
			{"TP-NEG005", bID, `"candidate_tiers":["tier_1_standardized"],"capability":{"capability_id":"synapse.telemetry","version":"9.9.9","descriptor_hash":"sha256:00"}`,
				http.StatusConflict, wire.CodeNegTier1Mismatch, negotiate.ReasonTier1Mismatch},
			{"TP-NEG006", bID, `"candidate_tiers":["tier_2_ai_generated"]`, http.StatusConflict, wire.CodeNegNoLLM, negotiate.ReasonNoLLM},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := a.do(t, "POST", api("/negotiate"), negotiateBody(tc.peer, tc.extra))
				e := r.wantError(t, tc.status, tc.code)
				if tc.reason == "" {
					return
				}
				d, _ := e["details"].(map[string]any)
				if d["rejected"] != true || d["reason"] != tc.reason {
					t.Errorf("details = %v, want rejected with reason %s", d, tc.reason)
				}
			})
		}
		r := a.do(t, "POST", api("/negotiate"), negotiateBody(bID, `"candidate_tiers":["tier_2_ai_generated"]`))
		e := r.wantError(t, http.StatusConflict, wire.CodeNegNoLLM)
		alt, _ := e["details"].(map[string]any)["alternative_proposal"].(map[string]any)
		if tiers, _ := alt["candidate_tiers"].([]any); len(tiers) != 1 || tiers[0] != string(negotiate.Tier3) {
			t.Errorf("alternative_proposal = %v, want tier 3", alt)
		}
		if r := a.do(t, "POST", api("/negotiate"), negotiateBody(bID, ""), withToken("")); r.status != http.StatusUnauthorized {
			t.Errorf("without a token: %d, want 401", r.status)
		}
	})

	var id string
	t.Run("contract made and kept on both sides", func(t *testing.T) {
		r := a.do(t, "POST", api("/negotiate"), negotiateBody(bID, `"preferred_security_level":"standard","session_purpose":"diagnostics"`))
		r.wantStatus(t, http.StatusCreated)
		var ci contracts.Info
		if err := json.Unmarshal(r.body, &ci); err != nil {
			t.Fatal(err)
		}
		id = ci.Contract.ContractID
		if ci.Role != contracts.RoleRequester || ci.Status != negotiate.StatusActive || ci.Contract.SecurityLevel != negotiate.Standard ||
			r.header.Get("Location") != api("/contracts/"+id) {
			t.Fatalf("answer %s (Location %q)", r.body, r.header.Get("Location"))
		}
		for _, side := range []struct {
			ts   *testServer
			role string
		}{{a, contracts.RoleRequester}, {b, contracts.RoleResponder}} {
			got := side.ts.do(t, "GET", api("/contracts/"+id), nil)
			got.wantStatus(t, http.StatusOK)
			if m := got.object(t); m["role"] != side.role || m["status"] != negotiate.StatusActive {
				t.Errorf("GET /contracts/%s on the %s: %s", id, side.role, got.body)
			}
		}
		list := a.do(t, "GET", api("/contracts?peer="+bID), nil)
		list.wantStatus(t, http.StatusOK)
		if cs, _ := list.object(t)["contracts"].([]any); len(cs) != 1 {
			t.Errorf("GET /contracts?peer= = %s, want the one contract", list.body)
		}
		a.do(t, "GET", api("/contracts/01902c4f-1a2b-7000-8000-00000000dead"), nil).wantError(t, http.StatusNotFound, wire.CodeNegContractUnknown)
	})
	t.Run("revoked on both sides", func(t *testing.T) {
		r := a.do(t, "POST", api("/contracts/"+id+"/revoke"), nil)
		r.wantStatus(t, http.StatusOK)
		if m := r.object(t); m["status"] != negotiate.StatusRevoked || m["revoked_by"] != "local" {
			t.Fatalf("revoke answered %s", r.body)
		}
		testutil.Eventually(t, pollTimeout, "the responder learns of the revocation", func() bool {
			return strings.Contains(string(b.do(t, "GET", api("/contracts/"+id), nil).body), `"status":"revoked"`)
		})
		m := envelopeFrom(t, a, b, wire.MsgTaskRequest, echoRequest("01902c4f-1a2b-7000-8000-0000000000e1"),
			func(m *wire.UnifiedSynapseMessage) { m.ProtocolContractRef = id })
		b.postEnvelope(t, envelopeJSON(t, m)).wantError(t, http.StatusGone, wire.CodeNegContractExpired)
		// Without a contract any more, a plain message from a peer that
		// negotiated before is refused too.
		m = envelopeFrom(t, a, b, wire.MsgTaskRequest, echoRequest("01902c4f-1a2b-7000-8000-0000000000e2"), nil)
		b.postEnvelope(t, envelopeJSON(t, m)).wantError(t, http.StatusPreconditionRequired, wire.CodeNegContractMissing)
	})
	t.Run("negotiate_request in msgpack over /message", func(t *testing.T) {
		req := negotiate.Request{CandidateTransports: []negotiate.Transport{{Protocol: negotiate.RESTAPI}}, CandidateTiers: []negotiate.Tier{negotiate.Tier3}}
		m := envelopeFrom(t, a, b, wire.MsgNegotiateRequest, nil, func(m *wire.UnifiedSynapseMessage) {
			pl, err := wire.NewMsgpackPayload(&req)
			if err != nil {
				t.Fatal(err)
			}
			m.Payload = pl
		})
		body, err := wire.EncodeEnvelopeMsgpack(m)
		if err != nil {
			t.Fatal(err)
		}
		r := b.postEnvelope(t, body, withHeader("Content-Type", wire.ContentMsgpack))
		r.wantStatus(t, http.StatusOK)
		resp, err := wire.DecodeEnvelopeMsgpack(r.body)
		if err != nil {
			t.Fatalf("answer is not a msgpack envelope: %v", err)
		}
		c, err := negotiate.DecodeContract(resp.Payload)
		if err != nil || resp.MessageType != wire.MsgNegotiateResponse || resp.CorrelationID != m.MessageID ||
			c.TransportMethod.Protocol != negotiate.RESTAPI || c.CommunicationTier != negotiate.Tier3 {
			t.Fatalf("answer %s for %s: %+v, %v", resp.MessageType, resp.CorrelationID, c, err)
		}
		if err := negotiate.CheckContract(&req, c, negotiate.Basic, b.a.Clock().Now()); err != nil {
			t.Errorf("the contract breaks §8.4.3: %v", err)
		}
	})
}
