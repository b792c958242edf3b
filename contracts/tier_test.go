package contracts_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
	"github.com/synapse-edge/synapse/wire/encrypt"
)

const (
	claimIn  = `{"type":"object","required":["patient","claim_no"],"properties":{"patient":{"type":"string"},"claim_no":{"type":"integer"}}}`
	claimOut = `{"type":"object","required":["approved"],"properties":{"approved":{"type":"boolean"},"comment":{"type":"string"}}}`
	// goodMapping is what the stub LLM answers: the requested interface
	// onto claims.lookup.
	goodMapping = "```json\n{\"task_type\":\"claims.lookup\",\"input\":{\"name\":\"patient\",\"number\":\"claim_no\"},\"output\":{\"approved\":\"ok\",\"comment\":\"text\"}}\n```"
	// badMapping takes a field the requester does not have.
	badMapping = `{"task_type":"claims.lookup","input":{"name":"patient","number":"claim_number"},"output":{"approved":"ok"}}`
)

// claimsHandler is the handlers' config of an agent with the local task
// type the session maps onto.
func claimsHandler(t *testing.T) handlers.Config {
	return handlers.Config{Commands: []handlers.Command{{TaskType: "claims.lookup", Command: script(t, "claims.sh"),
		InputSchema:  json.RawMessage(`{"type":"object","required":["name","number"],"properties":{"name":{"type":"string"},"number":{"type":"integer"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"text":{"type":"string"}}}`)}}}
}

// TestSeedExample replays seed 002 §8.5 between two agents: a patient's
// agent asks a hospital's (another system) for tier 2 or 3 with high
// security and a session purpose; the hospital's LLM backend maps the
// requested interface onto a local task type; a task of the session then
// runs there, encrypted, and its result comes back in the requester's
// schema.
func TestSeedExample(t *testing.T) {
	llm := newChatStub(t, goodMapping)
	a := startPeer(t, "patient-zhang", inSystem("patients"))
	b := startPeerNode(t, peernode.Options{Name: "hospital-east", HandlerConfig: claimsHandler(t),
		Config: []func(*agent.Config){inSystem("hospital"), llm.withLLM}})
	pair(t, a, b)
	req := negotiate.Request{
		CandidateTransports: []negotiate.Transport{
			{Protocol: negotiate.NativeTP, Endpoint: b.url(), Version: "1.0.0"},
			{Protocol: negotiate.A2AJSONRPC, Endpoint: b.url() + "/a2a", Version: "1.0.0"},
		},
		CandidateTiers:         []negotiate.Tier{negotiate.Tier2, negotiate.Tier3},
		PreferredSecurityLevel: negotiate.High,
		SessionPurpose:         "claim_consultation",
		InputSchema:            wire.JSONValue(claimIn),
		OutputSchema:           wire.JSONValue(claimOut),
	}
	ci := negotiated(t, a, b, req)
	c := ci.Contract

	t.Run("the contract has the example's shape", func(t *testing.T) {
		raw, _ := json.Marshal(c)
		var got map[string]any
		_ = json.Unmarshal(raw, &got)
		for _, k := range []string{"contract_id", "transport_method", "communication_tier", "security_level", "contract_expiration", "negotiation_trace"} {
			if _, ok := got[k]; !ok {
				t.Errorf("contract lacks %s: %s", k, raw)
			}
		}
		if c.CommunicationTier != negotiate.Tier2 || c.SecurityLevel != negotiate.High ||
			c.TransportMethod != req.CandidateTransports[0] {
			t.Errorf("contract = %s %+v, want tier 2, high, the first transport", c, c.TransportMethod)
		}
		tr := c.NegotiationTrace
		if len(tr) != 2 || tr[0].Step != 1 || tr[0].Selected != nil || !reflect.DeepEqual(tr[0].Proposed, req.CandidateTransports) ||
			tr[1].Step != 2 || len(tr[1].Proposed) != 0 || tr[1].Selected == nil || *tr[1].Selected != req.CandidateTransports[0] {
			t.Errorf("trace = %+v, want step 1 proposing both transports and step 2 selecting native_tp", tr)
		}
		steps, _ := got["negotiation_trace"].([]any)
		if s2, _ := steps[1].(map[string]any); s2 == nil || s2["proposed"] == nil {
			t.Errorf(`step 2 must carry "proposed": [] as the example does: %s`, raw)
		}
	})
	t.Run("the session mapping was made and validated", func(t *testing.T) {
		want := &negotiate.Mapping{SessionTaskType: "claim_consultation", TaskType: "claims.lookup",
			Input: map[string]string{"name": "patient", "number": "claim_no"}, Output: map[string]string{"approved": "ok", "comment": "text"}}
		if !reflect.DeepEqual(c.SessionMapping, want) {
			t.Errorf("session_mapping = %+v, want %+v", c.SessionMapping, want)
		}
	})
	t.Run("a task of the session runs as the mapped local task", func(t *testing.T) {
		task := submitTo(t, a, b, "claim_consultation", `{"patient":"Zhang","claim_no":42}`)
		got := waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"approved":true,"comment":"reviewed"}`)) {
			t.Fatalf("requester's task is %s with %s, want the result in its own schema", describe(got), got.Result)
		}
		remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted)
		if remote.Type != "claims.lookup" || !jsonEqual(t, remote.Payload, []byte(`{"name":"Zhang","number":42}`)) {
			t.Errorf("executor ran %s with %s, want claims.lookup with the mapped fields", remote.Type, remote.Payload)
		}
		if m, _ := received(t, b, wire.MsgTaskRequest); m.ContentType != encrypt.ContentEncrypted || m.ProtocolContractRef != c.ContractID {
			t.Errorf("task_request content_type %q ref %q, want encrypted under the contract", m.ContentType, m.ProtocolContractRef)
		}
	})
	t.Run("a wrong mapping is refused", func(t *testing.T) {
		llm.mu.Lock()
		llm.mapping = badMapping
		llm.mu.Unlock()
		only2 := req
		only2.CandidateTiers = []negotiate.Tier{negotiate.Tier2}
		we := refused(t, a, b, only2, wire.CodeNegNoLLM)
		if we.Details["reason"] != negotiate.ReasonBadMapping || !strings.Contains(we.Message, "claim_number") {
			t.Errorf("refusal %v %q, want session_mapping_invalid naming the bad field", we.Details, we.Message)
		}
		if alt := alternative(t, we); !slices.Equal(alt.CandidateTiers, []negotiate.Tier{negotiate.Tier3}) {
			t.Errorf("alternative tiers = %v, want tier 3", alt.CandidateTiers)
		}
		ci := negotiated(t, a, b, req) // tier 3 was listed: the contract falls to it
		if ci.Contract.CommunicationTier != negotiate.Tier3 || ci.Contract.SessionMapping != nil ||
			!strings.Contains(ci.Contract.NegotiationTrace[1].Note, "session mapping") {
			t.Errorf("contract = %s, note %q; want tier 3 without a mapping", ci.Contract, ci.Contract.NegotiationTrace[1].Note)
		}
	})
}

// TestNaturalLanguage: tier-3 text goes to the LLM backend when there is
// one, else to a person.
func TestNaturalLanguage(t *testing.T) {
	llm := newChatStub(t, "")
	a := startPeer(t, "asker")
	b := startPeer(t, "knower", llm.withLLM)
	pair(t, a, b)
	t.Run("the LLM answers a peer", func(t *testing.T) {
		task := submitTo(t, a, b, handlers.NaturalLanguageType, `{"text":"What is the capital of France?"}`)
		got := waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"text":"LLM: What is the capital of France?","answered_by":"llm"}`)) {
			t.Fatalf("task is %s with %s, want the LLM's answer", describe(got), got.Result)
		}
	})
	t.Run("a person answers without an LLM", func(t *testing.T) {
		task := submit(t, a.a, handlers.NaturalLanguageType, `{"text":"Can the valve be closed tonight?"}`)
		got := waitStatus(t, a.a, task.ID, wire.StatusNeedHuman)
		if got.Human == nil || got.Human.Reason.Message != "Can the valve be closed tonight?" {
			t.Fatalf("need_human payload = %+v, want the text", got.Human)
		}
		if _, err := a.a.Decide(context.Background(), admin, task.ID, agent.DecisionRequest{Action: agent.ActionModify,
			ApprovedFields: map[string]any{"text": "Yes, after 22:00."}}); err != nil {
			t.Fatal(err)
		}
		got = waitFinal(t, a.a, task.ID)
		if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"text":"Yes, after 22:00.","answered_by":"admin"}`)) {
			t.Fatalf("task is %s with %s, want the person's answer", describe(got), got.Result)
		}
	})
}
