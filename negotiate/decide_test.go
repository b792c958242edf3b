package negotiate_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

const (
	contractID = "01902c4f-1a2b-7000-8000-aaaa00000001"
	telemetry  = "sha256:aaaa"
)

var now = time.Date(2026, 5, 27, 8, 31, 1, 0, time.UTC)

// responder is a responder in system "hospital" that serves native_tp and
// rest_api, every tier, with an LLM and one tier-1 routine.
func responder() negotiate.Responder {
	return negotiate.Responder{
		AgentID: "hospital_b", SystemID: "hospital", Endpoint: "http://127.0.0.1:9001",
		Transports: []string{negotiate.NativeTP, negotiate.RESTAPI},
		Tiers:      negotiate.Tiers(),
		LLM:        true,
		Routine: func(id string) (negotiate.CapabilityRef, bool) {
			if id != "synapse.telemetry" {
				return negotiate.CapabilityRef{}, false
			}
			return negotiate.CapabilityRef{CapabilityID: id, Version: "1.0.0", DescriptorHash: telemetry}, true
		},
		PrivateFields: map[string][]string{"claim": {"ssn"}},
	}
}

func native() []negotiate.Transport {
	return []negotiate.Transport{{Protocol: negotiate.NativeTP, Endpoint: "http://127.0.0.1:9001", Version: "1.0.0"}}
}

func tiers(ts ...negotiate.Tier) []negotiate.Tier { return ts }

var tel100 = &negotiate.CapabilityRef{CapabilityID: "synapse.telemetry", Version: "1.0.0", DescriptorHash: telemetry}

// TestDecide covers every outcome of the responder's decision: each
// TP-NEG condition a request can cause, the choice of tier, transport and
// security level.
func TestDecide(t *testing.T) {
	type want struct {
		code      wire.ErrorCode // "" = a contract
		reason    string
		altTiers  []negotiate.Tier
		altTransp []string
		tier      negotiate.Tier
		transport string
		level     negotiate.SecurityLevel
	}
	for _, tc := range []struct {
		name     string
		req      negotiate.Request
		system   string // the requester's; default "hospital"
		mutate   func(*negotiate.Responder)
		want     want
		wantNote string
	}{
		{name: "TP-NEG001 no transports", req: negotiate.Request{CandidateTransports: []negotiate.Transport{}, CandidateTiers: tiers(negotiate.Tier3)},
			want: want{code: wire.CodeNegNoTransports, reason: negotiate.ReasonNoTransports}},
		{name: "TP-NEG002 no tiers", req: negotiate.Request{CandidateTransports: native(), CandidateTiers: nil},
			want: want{code: wire.CodeNegNoTiers, reason: negotiate.ReasonNoTiers}},
		{name: "unknown security level", req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), PreferredSecurityLevel: "paranoid"},
			want: want{code: wire.CodeInvalidParams, reason: "invalid_security_level"}},
		{name: "private field with a space", req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3),
			PrivateFields: map[string][]string{"claim": {"social security"}}},
			want: want{code: wire.CodeInvalidParams, reason: "invalid_private_fields"}},
		{name: "TP-NEG003 native_tp only, responder rest_api only (downgrade row 4)",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3)},
			mutate: func(r *negotiate.Responder) { r.Transports = []string{negotiate.RESTAPI} },
			want:   want{code: wire.CodeNegNoCommonTransp, reason: negotiate.ReasonNoCommonTransport, altTransp: []string{negotiate.RESTAPI}}},
		{name: "TP-NEG003 a2a_jsonrpc only",
			req:  negotiate.Request{CandidateTransports: []negotiate.Transport{{Protocol: negotiate.A2AJSONRPC}}, CandidateTiers: tiers(negotiate.Tier3)},
			want: want{code: wire.CodeNegNoCommonTransp, reason: negotiate.ReasonNoCommonTransport, altTransp: []string{negotiate.NativeTP, negotiate.RESTAPI}}},
		{name: "TP-NEG003 no known tier",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers("tier_0_telepathy")},
			want: want{code: wire.CodeNegNoCommonTransp, reason: negotiate.ReasonNoCommonTier, altTiers: tiers(negotiate.Tier2, negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG004 high requested, standard at most (downgrade row 3)",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), PreferredSecurityLevel: negotiate.High},
			mutate: func(r *negotiate.Responder) { r.MaxSecurity = negotiate.Standard },
			want:   want{code: wire.CodeNegSecurity, reason: negotiate.ReasonSecurity}},
		{name: "TP-NEG004 basic requested across systems, standard at most",
			req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3)}, system: "patients",
			mutate: func(r *negotiate.Responder) { r.MaxSecurity = negotiate.Standard },
			want:   want{code: wire.CodeNegSecurity, reason: negotiate.ReasonSecurity}},
		{name: "TP-NEG004 consult, basic at most",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), GoalType: negotiate.GoalConsult},
			mutate: func(r *negotiate.Responder) { r.MaxSecurity = negotiate.Basic },
			want:   want{code: wire.CodeNegSecurity, reason: negotiate.ReasonSecurity}},
		{name: "TP-NEG005 tier 1 version differs, LLM: offer tier 2 (downgrade row 1)",
			req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1),
				Capability: &negotiate.CapabilityRef{CapabilityID: "synapse.telemetry", Version: "2.0.0", DescriptorHash: telemetry}},
			want: want{code: wire.CodeNegTier1Mismatch, reason: negotiate.ReasonTier1Mismatch, altTiers: tiers(negotiate.Tier2, negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG005 tier 1 hash differs, no LLM: offer tier 3",
			req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1),
				Capability: &negotiate.CapabilityRef{CapabilityID: "synapse.telemetry", Version: "1.0.0", DescriptorHash: "sha256:bbbb"}},
			mutate: func(r *negotiate.Responder) { r.LLM = false },
			want:   want{code: wire.CodeNegTier1Mismatch, reason: negotiate.ReasonTier1Mismatch, altTiers: tiers(negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG005 tier 1 unknown routine",
			req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1),
				Capability: &negotiate.CapabilityRef{CapabilityID: "acme.vibration", Version: "1.0.0", DescriptorHash: telemetry}},
			want: want{code: wire.CodeNegTier1Mismatch, reason: negotiate.ReasonTier1Mismatch, altTiers: tiers(negotiate.Tier2, negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG005 tier 1 without a capability",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1)},
			want: want{code: wire.CodeNegTier1Mismatch, reason: negotiate.ReasonTier1Mismatch, altTiers: tiers(negotiate.Tier2, negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG006 tier 2 without LLM: offer tier 3 (downgrade row 2)",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier2)},
			mutate: func(r *negotiate.Responder) { r.LLM = false },
			want:   want{code: wire.CodeNegNoLLM, reason: negotiate.ReasonNoLLM, altTiers: tiers(negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG006 tier 2 disabled by configuration",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier2)},
			mutate: func(r *negotiate.Responder) { r.Tiers = tiers(negotiate.Tier1, negotiate.Tier3) },
			want:   want{code: wire.CodeNegNoLLM, reason: negotiate.ReasonNoLLM, altTiers: tiers(negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},
		{name: "TP-NEG006 tier 1 and 2 both fail: the lowest candidate's error",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1, negotiate.Tier2)},
			mutate: func(r *negotiate.Responder) { r.LLM = false },
			want:   want{code: wire.CodeNegNoLLM, reason: negotiate.ReasonNoLLM, altTiers: tiers(negotiate.Tier3), altTransp: []string{negotiate.NativeTP}}},

		{name: "tier 1 when the routine is identical",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3, negotiate.Tier2, negotiate.Tier1), Capability: tel100},
			want: want{tier: negotiate.Tier1, transport: negotiate.NativeTP, level: negotiate.Basic}},
		{name: "tier 1 mismatch falls to tier 2 when listed",
			req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1, negotiate.Tier2, negotiate.Tier3),
				Capability: &negotiate.CapabilityRef{CapabilityID: "synapse.telemetry", Version: "0.9.0", DescriptorHash: telemetry}},
			want: want{tier: negotiate.Tier2, transport: negotiate.NativeTP, level: negotiate.Basic}, wantNote: "tier_1_standardized not served"},
		{name: "tier 1 disabled falls to tier 3",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1, negotiate.Tier3), Capability: tel100},
			mutate: func(r *negotiate.Responder) { r.Tiers = nil },
			want:   want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.Basic}, wantNote: "tier 1 is disabled here"},
		{name: "tier 2 without LLM falls to tier 3 when listed",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier2, negotiate.Tier3)},
			mutate: func(r *negotiate.Responder) { r.LLM = false },
			want:   want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.Basic}, wantNote: "no LLM backend"},
		{name: "highest tier whatever the list order",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3, negotiate.Tier2)},
			want: want{tier: negotiate.Tier2, transport: negotiate.NativeTP, level: negotiate.Basic}},
		{name: "unknown tiers are skipped",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers("tier_9", negotiate.Tier3)},
			want: want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.Basic}},
		{name: "first common transport in the requester's order",
			req: negotiate.Request{CandidateTransports: []negotiate.Transport{{Protocol: negotiate.A2AJSONRPC, Endpoint: "http://127.0.0.1:9001/a2a"},
				{Protocol: negotiate.RESTAPI}, {Protocol: negotiate.NativeTP}}, CandidateTiers: tiers(negotiate.Tier3)},
			want: want{tier: negotiate.Tier3, transport: negotiate.RESTAPI, level: negotiate.Basic}},
		{name: "standard as requested in the same system",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), PreferredSecurityLevel: negotiate.Standard},
			want: want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.Standard}},
		{name: "high across systems although basic was asked",
			req: negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3)}, system: "patients",
			want: want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.High}, wantNote: "security raised from basic to high"},
		{name: "high for consult",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), GoalType: negotiate.GoalConsult, PreferredSecurityLevel: negotiate.Standard},
			want: want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.High}},
		{name: "the responder's minimum raises the level",
			req:    negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3)},
			mutate: func(r *negotiate.Responder) { r.MinSecurity = negotiate.Standard },
			want:   want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.Standard}},
		{name: "high requested is kept",
			req:  negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), PreferredSecurityLevel: negotiate.High},
			want: want{tier: negotiate.Tier3, transport: negotiate.NativeTP, level: negotiate.High}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := responder()
			if tc.mutate != nil {
				tc.mutate(&r)
			}
			sys := tc.system
			if sys == "" {
				sys = "hospital"
			}
			req := tc.req
			c, rej := negotiate.Decide(negotiate.Input{Request: &req, Requester: "patient_a", RequesterSystem: sys,
				RequestTime: "2026-05-27T08:31:00.000Z", Now: now, ContractID: contractID}, r)
			if tc.want.code != "" {
				if rej == nil {
					t.Fatalf("Decide made contract %s, want %s", c, tc.want.code)
				}
				checkRejection(t, rej, tc.want.code, tc.want.reason, tc.want.altTiers, tc.want.altTransp)
				return
			}
			if rej != nil {
				t.Fatalf("Decide refused: %s %s (%s)", rej.Code, rej.Reason, rej.Message)
			}
			if c.CommunicationTier != tc.want.tier || c.TransportMethod.Protocol != tc.want.transport || c.SecurityLevel != tc.want.level {
				t.Errorf("contract = %s %s %s, want %s %s %s", c.CommunicationTier, c.TransportMethod.Protocol, c.SecurityLevel,
					tc.want.tier, tc.want.transport, tc.want.level)
			}
			if !c.SecurityLevel.AtLeast(req.Security()) {
				t.Errorf("security level %s is below the requested %s", c.SecurityLevel, req.Security())
			}
			if got := c.NegotiationTrace[1].Note; !strings.Contains(got, tc.wantNote) {
				t.Errorf("trace note = %q, want it to mention %q", got, tc.wantNote)
			}
			if err := negotiate.CheckContract(&req, c, req.Security(), now); err != nil {
				t.Errorf("the requester would refuse the contract: %v", err)
			}
		})
	}
}

func checkRejection(t *testing.T, rej *negotiate.Rejection, code wire.ErrorCode, reason string, altTiers []negotiate.Tier, altTransp []string) {
	t.Helper()
	if rej.Code != code || rej.Reason != reason || !rej.Rejected {
		t.Fatalf("rejection = %s %q rejected=%v, want %s %q", rej.Code, rej.Reason, rej.Rejected, code, reason)
	}
	var gotTiers []negotiate.Tier
	var gotTransp []string
	if a := rej.AlternativeProposal; a != nil {
		gotTiers = a.CandidateTiers
		for _, tr := range a.CandidateTransports {
			gotTransp = append(gotTransp, tr.Protocol)
		}
	}
	if !slices.Equal(gotTiers, altTiers) || !slices.Equal(gotTransp, altTransp) {
		t.Errorf("alternative_proposal tiers %v transports %v, want %v %v", gotTiers, gotTransp, altTiers, altTransp)
	}
	e := rej.Err()
	d, _ := wire.Lookup(code)
	if e.Code != code || e.Status() != d.Status || e.Details["rejected"] != true || e.Details["reason"] != reason || e.Message == "" {
		t.Errorf("Err() = %+v, want code %s status %d with the seed's object in details", e, code, d.Status)
	}
	if (altTiers != nil || altTransp != nil) != (e.Details["alternative_proposal"] != nil) {
		t.Errorf("Err() details alternative_proposal = %v", e.Details["alternative_proposal"])
	}
}

// TestDecideContractShape checks the contract against the seed's §8.5.2
// example: fields, expiration, the two trace steps.
func TestDecideContractShape(t *testing.T) {
	req := negotiate.Request{
		CandidateTransports: []negotiate.Transport{
			{Protocol: negotiate.NativeTP, Endpoint: "http://127.0.0.1:9001", Version: "1.0.0"},
			{Protocol: negotiate.A2AJSONRPC, Endpoint: "http://127.0.0.1:9001/a2a", Version: "1.0.0"},
		},
		CandidateTiers:         tiers(negotiate.Tier2, negotiate.Tier3),
		PreferredSecurityLevel: negotiate.High,
		SessionPurpose:         "claim_consultation",
		PrivateFields:          map[string][]string{"claim": {"dob", "ssn"}},
	}
	r := responder()
	r.TTL = 48 * time.Hour // capped at 24 h
	c, rej := negotiate.Decide(negotiate.Input{Request: &req, Requester: "patient_a", RequesterSystem: "patients",
		RequestTime: "2026-05-27T08:31:00.000Z", Now: now, ContractID: contractID}, r)
	if rej != nil {
		t.Fatalf("Decide: %s", rej.Message)
	}
	got, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"contract_id":"01902c4f-1a2b-7000-8000-aaaa00000001",` +
		`"transport_method":{"protocol":"native_tp","endpoint":"http://127.0.0.1:9001","version":"1.0.0"},` +
		`"communication_tier":"tier_2_ai_generated","security_level":"high","contract_expiration":"2026-05-28T08:31:01.000Z",` +
		`"negotiation_trace":[` +
		`{"step":1,"initiator_fay_id":"patient_a","initiator_agent_id":"patient_a","proposed":[{"protocol":"native_tp","endpoint":"http://127.0.0.1:9001","version":"1.0.0"},` +
		`{"protocol":"a2a_jsonrpc","endpoint":"http://127.0.0.1:9001/a2a","version":"1.0.0"}],"selected":null,` +
		`"proposed_tiers":["tier_2_ai_generated","tier_3_natural_language"],"security_level":"high","timestamp":"2026-05-27T08:31:00.000Z"},` +
		`{"step":2,"initiator_fay_id":"hospital_b","initiator_agent_id":"hospital_b","proposed":[],"selected":{"protocol":"native_tp","endpoint":"http://127.0.0.1:9001","version":"1.0.0"},` +
		`"selected_tier":"tier_2_ai_generated","security_level":"high","timestamp":"2026-05-27T08:31:01.000Z"}],` +
		`"private_fields":{"claim":["dob","ssn"]}}`
	if string(got) != want {
		t.Errorf("contract =\n%s\nwant\n%s", got, want)
	}

	t.Run("endpoint filled and private fields only from standard", func(t *testing.T) {
		req := negotiate.Request{CandidateTransports: []negotiate.Transport{{Protocol: negotiate.RESTAPI}}, CandidateTiers: tiers(negotiate.Tier3),
			PrivateFields: map[string][]string{"claim": {"dob"}}}
		c, _ := negotiate.Decide(negotiate.Input{Request: &req, Requester: "a", RequesterSystem: "hospital", Now: now, ContractID: contractID}, responder())
		if want := (negotiate.Transport{Protocol: negotiate.RESTAPI, Endpoint: "http://127.0.0.1:9001", Version: wire.ProtocolVersion}); c.TransportMethod != want {
			t.Errorf("transport_method = %+v, want %+v", c.TransportMethod, want)
		}
		if c.PrivateFields != nil {
			t.Errorf("basic contract has private_fields %v", c.PrivateFields)
		}
		req.PreferredSecurityLevel = negotiate.Standard
		c, _ = negotiate.Decide(negotiate.Input{Request: &req, Requester: "a", RequesterSystem: "hospital", Now: now, ContractID: contractID}, responder())
		if want := map[string][]string{"claim": {"dob", "ssn"}}; !reflect.DeepEqual(c.PrivateFields, want) {
			t.Errorf("standard contract private_fields = %v, want %v (both sides merged)", c.PrivateFields, want)
		}
	})
}

func TestRequiredSecurity(t *testing.T) {
	for _, tc := range []struct {
		req         negotiate.Request
		local, peer string
		min, want   negotiate.SecurityLevel
	}{
		{negotiate.Request{}, "s", "s", "", negotiate.Basic},
		{negotiate.Request{}, "s", "s", negotiate.Standard, negotiate.Standard},
		{negotiate.Request{PreferredSecurityLevel: negotiate.Standard}, "s", "s", negotiate.Basic, negotiate.Standard},
		{negotiate.Request{}, "s", "t", negotiate.Basic, negotiate.High},
		{negotiate.Request{GoalType: negotiate.GoalConsult}, "s", "s", negotiate.Basic, negotiate.High},
		{negotiate.Request{PreferredSecurityLevel: negotiate.High}, "s", "s", negotiate.Basic, negotiate.High},
	} {
		if got := negotiate.RequiredSecurity(&tc.req, tc.local, tc.peer, tc.min); got != tc.want {
			t.Errorf("RequiredSecurity(%+v, %s, %s, %s) = %s, want %s", tc.req, tc.local, tc.peer, tc.min, got, tc.want)
		}
	}
}

func TestEndpointFor(t *testing.T) {
	for _, c := range []struct{ protocol, base, want string }{
		{negotiate.A2AJSONRPC, "http://127.0.0.1:9001", "http://127.0.0.1:9001/a2a"},
		{negotiate.A2AJSONRPC, "http://127.0.0.1:9001/", "http://127.0.0.1:9001/a2a"},
		{negotiate.A2AJSONRPC, "", ""},
		{negotiate.NativeTP, "http://127.0.0.1:9001", "http://127.0.0.1:9001"},
	} {
		if got := negotiate.EndpointFor(c.protocol, c.base); got != c.want {
			t.Errorf("EndpointFor(%s, %q) = %q, want %q", c.protocol, c.base, got, c.want)
		}
	}
}
