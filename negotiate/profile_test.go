package negotiate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// full is responder() meeting tp_full: compliant, with a tier-1 routine.
func full() negotiate.Responder {
	r := responder()
	r.Compliant, r.Routines = true, 1
	return r
}

// TestProfile: the declared profile follows what the responder serves,
// and drops to the profile below as soon as one requirement is missing.
func TestProfile(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*negotiate.Responder)
		want negotiate.Profile
	}{
		{"everything", func(*negotiate.Responder) {}, negotiate.ProfileFull},
		{"no tier-1 routine", func(r *negotiate.Responder) { r.Routines = 0 }, negotiate.ProfileSecure},
		{"tier 1 disabled", func(r *negotiate.Responder) { r.Tiers = []negotiate.Tier{negotiate.Tier2, negotiate.Tier3} }, negotiate.ProfileSecure},
		{"at most standard", func(r *negotiate.Responder) { r.MaxSecurity = negotiate.Standard }, negotiate.ProfileSecure},
		{"no LLM", func(r *negotiate.Responder) { r.LLM = false }, negotiate.ProfileCore},
		{"tier 2 disabled", func(r *negotiate.Responder) { r.Tiers = []negotiate.Tier{negotiate.Tier1} }, negotiate.ProfileCore},
		{"at most basic", func(r *negotiate.Responder) { r.MaxSecurity = negotiate.Basic }, negotiate.ProfileCore},
		{"only tier 3, no LLM", func(r *negotiate.Responder) { r.Tiers, r.LLM, r.Routines = nil, false, 0 }, negotiate.ProfileCore},
		{"basic interfaces missing", func(r *negotiate.Responder) { r.Compliant = false }, ""},
	} {
		r := full()
		c.edit(&r)
		if got := r.Profile(); got != c.want {
			t.Errorf("%s: Profile() = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRequiredProfile: a request requiring more than the responder meets
// is refused with the code of what is missing; one it meets gets a
// contract, at the profile's default security level.
func TestRequiredProfile(t *testing.T) {
	req := func(p negotiate.Profile) *negotiate.Request {
		return &negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier3), RequiredProfile: p}
	}
	decide := func(r negotiate.Responder, q *negotiate.Request) (*negotiate.Contract, *negotiate.Rejection) {
		return negotiate.Decide(negotiate.Input{Request: q, Requester: "patient_a", RequesterSystem: "hospital", Now: now, ContractID: contractID}, r)
	}
	for _, c := range []struct {
		name     string
		edit     func(*negotiate.Responder)
		required negotiate.Profile
		code     wire.ErrorCode
		have     negotiate.Profile
		missing  []string
	}{
		{"tp_full without routines", func(r *negotiate.Responder) { r.Routines = 0 }, negotiate.ProfileFull,
			wire.CodeNegTier1Mismatch, negotiate.ProfileSecure, []string{"tier_1_standardized"}},
		{"tp_full at most standard", func(r *negotiate.Responder) { r.MaxSecurity = negotiate.Standard }, negotiate.ProfileFull,
			wire.CodeNegSecurity, negotiate.ProfileSecure, []string{"security_level high"}},
		{"tp_secure without LLM", func(r *negotiate.Responder) { r.LLM = false }, negotiate.ProfileSecure,
			wire.CodeNegNoLLM, negotiate.ProfileCore, []string{"tier_2_ai_generated"}},
		{"tp_full without LLM or routines", func(r *negotiate.Responder) { r.LLM, r.Routines = false, 0 }, negotiate.ProfileFull,
			wire.CodeNegNoLLM, negotiate.ProfileCore, []string{"tier_2_ai_generated", "tier_1_standardized"}},
		{"tp_core without the basic interfaces", func(r *negotiate.Responder) { r.Compliant = false }, negotiate.ProfileCore,
			wire.CodeNegNoCommonTransp, "", []string{"the basic standard interfaces"}},
	} {
		r := full()
		c.edit(&r)
		_, rej := decide(r, req(c.required))
		if rej == nil {
			t.Errorf("%s: a contract, want %s", c.name, c.code)
			continue
		}
		if rej.Code != c.code || rej.Reason != negotiate.ReasonProfile || rej.Profile != c.have || !slices.Equal(rej.Missing, c.missing) {
			t.Errorf("%s: %s %s profile %q missing %q, want %s profile %q missing %q", c.name, rej.Code, rej.Reason, rej.Profile, rej.Missing, c.code, c.have, c.missing)
		}
		if !strings.Contains(rej.Message, string(c.required)) || rej.AlternativeProposal == nil || !slices.Contains(rej.AlternativeProposal.CandidateTiers, negotiate.Tier3) {
			t.Errorf("%s: message %q, alternative %+v", c.name, rej.Message, rej.AlternativeProposal)
		}
		e := rej.Err()
		if e.Details["profile"] != c.have || e.Details["reason"] != negotiate.ReasonProfile {
			t.Errorf("%s: details %v", c.name, e.Details)
		}
		// The same responder without the requirement negotiates.
		if _, rej := decide(r, req("")); rej != nil {
			t.Errorf("%s: without required_profile refused %s", c.name, rej.Code)
		}
	}

	t.Run("met", func(t *testing.T) {
		for _, p := range negotiate.Profiles() {
			c, rej := decide(full(), req(p))
			if rej != nil {
				t.Fatalf("%s refused: %s %s", p, rej.Code, rej.Message)
			}
			if want := p.DefaultSecurity(); c.SecurityLevel != want {
				t.Errorf("%s: security level %s, want the profile's default %s", p, c.SecurityLevel, want)
			}
		}
	})
	t.Run("unknown profile", func(t *testing.T) {
		_, rej := decide(full(), req("tp_max"))
		if rej == nil || rej.Code != wire.CodeInvalidParams {
			t.Fatalf("got %+v, want %s", rej, wire.CodeInvalidParams)
		}
	})
}
