package contracts_test

import (
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// TestDeclaredProfile: the protocol profile in the capabilities follows
// what the agent serves: its tiers, its LLM backend, its security levels
// and the interfaces its components provided.
func TestDeclaredProfile(t *testing.T) {
	llm := newChatStub(t, goodMapping)
	for _, c := range []struct {
		name string
		edit func(*agent.Config)
		want negotiate.Profile
	}{
		{"defaults, no LLM", func(*agent.Config) {}, negotiate.ProfileCore},
		{"an LLM backend", llm.withLLM, negotiate.ProfileFull},
		{"an LLM, tier 1 disabled", func(c *agent.Config) {
			llm.withLLM(c)
			c.Negotiation.Tiers = []string{string(negotiate.Tier2), string(negotiate.Tier3)}
		}, negotiate.ProfileSecure},
		{"an LLM, at most standard", func(c *agent.Config) {
			llm.withLLM(c)
			c.Negotiation.MaxSecurityLevel = string(negotiate.Standard)
		}, negotiate.ProfileSecure},
		{"an LLM, tier 2 disabled", func(c *agent.Config) {
			llm.withLLM(c)
			c.Negotiation.Tiers = []string{string(negotiate.Tier1)}
		}, negotiate.ProfileCore},
	} {
		n := startPeer(t, "profile", c.edit)
		if got := n.a.Capabilities().ProtocolProfile; got != string(c.want) {
			t.Errorf("%s: protocol_profile %q, want %q", c.name, got, c.want)
		}
	}

	t.Run("no profile before the basic interfaces are provided", func(t *testing.T) {
		cfg := agent.Defaults()
		cfg.DataDir, cfg.AgentName = t.TempDir(), "bare"
		a, err := agent.New(cfg, agent.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close(t.Context()) })
		// Open provides the core interfaces; the P2P layer and the HTTP
		// server, which provide the other basic ones, are not running.
		if got := a.Capabilities().ProtocolProfile; got != "" {
			t.Errorf("protocol_profile %q without the P2P and HTTP interfaces, want none", got)
		}
		for _, std := range wire.StandardInterfaces {
			if std.ComplianceLevel == wire.ComplianceBasic {
				if err := a.ProvideInterface(std.Name); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := a.Capabilities().ProtocolProfile; got != string(negotiate.ProfileCore) {
			t.Errorf("protocol_profile %q with every basic interface, want tp_core", got)
		}
	})
}

// TestRequiredProfileRefused: between two agents, a request that requires
// a profile the responder does not meet is refused with the code of what
// it lacks (no LLM: TP-NEG006), its profile in the details, and nothing
// stored; the one it meets gets a contract at the profile's default level.
func TestRequiredProfileRefused(t *testing.T) {
	a := startPeer(t, "asker")
	b := startPeer(t, "core-only")
	pair(t, a, b)
	we := refused(t, a, b, negotiate.Request{RequiredProfile: negotiate.ProfileSecure}, wire.CodeNegNoLLM)
	if we.Details["reason"] != negotiate.ReasonProfile || we.Details["profile"] != string(negotiate.ProfileCore) {
		t.Errorf("details %v: want reason %s and profile tp_core", we.Details, negotiate.ReasonProfile)
	}
	if alt := alternative(t, we); len(alt.CandidateTiers) != 1 || alt.CandidateTiers[0] != negotiate.Tier3 {
		t.Errorf("alternative_proposal %+v: want tier 3", alt)
	}
	refused(t, a, b, negotiate.Request{RequiredProfile: negotiate.ProfileFull}, wire.CodeNegNoLLM)
	if cs, _, err := b.a.Contracts().List(contracts.Query{Peer: a.id()}); err != nil || len(cs) != 0 {
		t.Errorf("the responder stored %d contracts (%v) after refusals", len(cs), err)
	}
	ci := negotiated(t, a, b, negotiate.Request{RequiredProfile: negotiate.ProfileCore})
	if ci.Contract.SecurityLevel != negotiate.Basic {
		t.Errorf("tp_core contract at %s, want basic", ci.Contract.SecurityLevel)
	}

	llm := newChatStub(t, goodMapping)
	c := startPeer(t, "full", llm.withLLM)
	pair(t, a, c)
	ci = negotiated(t, a, c, negotiate.Request{RequiredProfile: negotiate.ProfileFull})
	if ci.Contract.SecurityLevel != negotiate.Standard {
		t.Errorf("tp_full contract at %s, want the default standard", ci.Contract.SecurityLevel)
	}
}
