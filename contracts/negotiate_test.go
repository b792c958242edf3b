package contracts_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// TestNegotiate: two agents of one system negotiate; the contract is the
// one both keep, and the level is the one requested.
func TestNegotiate(t *testing.T) {
	a := startPeer(t, "requester")
	b := startPeer(t, "responder")
	pair(t, a, b)

	t.Run("basic by default, highest servable tier", func(t *testing.T) {
		ci := negotiated(t, a, b, negotiate.Request{})
		c := ci.Contract
		if c.CommunicationTier != negotiate.Tier3 || c.SecurityLevel != negotiate.Basic ||
			c.TransportMethod.Protocol != negotiate.NativeTP || c.TransportMethod.Endpoint != b.url() {
			t.Errorf("contract = %s at %s, want tier 3 basic native_tp at %s", c, c.TransportMethod.Endpoint, b.url())
		}
		exp, err := c.Expires()
		if err != nil || exp.Sub(time.Now()) > negotiate.MaxContractTTL || exp.Sub(time.Now()) < negotiate.MaxContractTTL-time.Minute {
			t.Errorf("contract_expiration %s, want 24 h from now", c.ContractExpiration)
		}
		tr := c.NegotiationTrace
		if len(tr) != 2 || tr[0].InitiatorFayID != a.id() || tr[0].Selected != nil ||
			!slices.Equal(tr[0].ProposedTiers, []negotiate.Tier{negotiate.Tier2, negotiate.Tier3}) ||
			tr[1].InitiatorFayID != b.id() || tr[1].Selected == nil || tr[1].SelectedTier != negotiate.Tier3 ||
			!strings.Contains(tr[1].Note, "no LLM backend") {
			t.Errorf("trace = %+v, want the requester's proposal (tiers 2 and 3) and the responder's choice of tier 3", tr)
		}
	})
	t.Run("tier 1 with the same routine", func(t *testing.T) {
		d, _ := a.n.Tier1.Registry().Get("synapse.telemetry")
		ref := &negotiate.CapabilityRef{CapabilityID: d.CapabilityID, Version: d.Version, DescriptorHash: d.Hash()}
		ci := negotiated(t, a, b, negotiate.Request{Capability: ref})
		if c := ci.Contract; c.CommunicationTier != negotiate.Tier1 || c.Capability == nil || *c.Capability != *ref {
			t.Errorf("contract = %s capability %+v, want tier 1 with %+v", c, c.Capability, ref)
		}
	})
	t.Run("standard as requested", func(t *testing.T) {
		ci := negotiated(t, a, b, negotiate.Request{PreferredSecurityLevel: negotiate.Standard})
		if ci.Contract.SecurityLevel != negotiate.Standard {
			t.Errorf("security_level = %s, want standard", ci.Contract.SecurityLevel)
		}
	})
	t.Run("listed and read on both sides", func(t *testing.T) {
		mine, _, err := a.a.Contracts().List(contracts.Query{Peer: b.id()})
		if err != nil || len(mine) != 3 || mine[0].Contract.SecurityLevel != negotiate.Standard {
			t.Fatalf("requester's contracts with the responder = %d (%v), want 3, newest (standard) first", len(mine), err)
		}
		theirs, next, err := b.a.Contracts().List(contracts.Query{Limit: 2})
		if err != nil || len(theirs) != 2 || next == "" {
			t.Fatalf("responder's first page = %d, next %q, %v", len(theirs), next, err)
		}
		if _, err := a.a.Contracts().Get("01902c4f-1a2b-7000-8000-00000000dead"); err == nil {
			t.Error("Contract(unknown) found something")
		} else {
			wantCode(t, err, wire.CodeNegContractUnknown)
		}
	})
	t.Run("not a peer", func(t *testing.T) {
		_, err := a.a.Network.Negotiate(context.Background(), "stranger", negotiate.Request{})
		wantCode(t, err, wire.CodeNotFound)
	})
}

// TestNegotiateRefusals: each TP-NEG code a responder can give and each
// row of seed 002 §8.4.4's downgrade table, between two agents; each
// offered downgrade is then accepted by asking again explicitly.
func TestNegotiateRefusals(t *testing.T) {
	llm := newChatStub(t, "")
	a := startPeer(t, "requester")
	plain := startPeer(t, "plain") // no LLM, every transport and level
	restOnly := startPeer(t, "rest-only", func(c *agent.Config) { c.Negotiation.Transports = []string{negotiate.RESTAPI} })
	noCrypto := startPeer(t, "no-crypto", func(c *agent.Config) { c.Negotiation.MaxSecurityLevel = string(negotiate.Standard) })
	withLLM := startPeer(t, "with-llm", llm.withLLM)
	for _, b := range []*peerNode{plain, restOnly, noCrypto, withLLM} {
		pair(t, a, b)
	}
	tel, _ := a.n.Tier1.Registry().Get("synapse.telemetry")
	native := []negotiate.Transport{{Protocol: negotiate.NativeTP}}

	t.Run("TP-NEG001 no transports", func(t *testing.T) {
		refused(t, a, plain, negotiate.Request{CandidateTransports: []negotiate.Transport{}}, wire.CodeNegNoTransports)
	})
	t.Run("TP-NEG002 no tiers", func(t *testing.T) {
		refused(t, a, plain, negotiate.Request{CandidateTiers: []negotiate.Tier{}}, wire.CodeNegNoTiers)
	})
	t.Run("row 4: native_tp → the responder's transport (TP-NEG003)", func(t *testing.T) {
		we := refused(t, a, restOnly, negotiate.Request{CandidateTransports: native}, wire.CodeNegNoCommonTransp)
		alt := alternative(t, we)
		if len(alt.CandidateTransports) != 1 || alt.CandidateTransports[0].Protocol != negotiate.RESTAPI {
			t.Fatalf("alternative transports = %+v, want rest_api", alt.CandidateTransports)
		}
		ci := negotiated(t, a, restOnly, negotiate.Request{CandidateTransports: alt.CandidateTransports})
		if ci.Contract.TransportMethod.Protocol != negotiate.RESTAPI {
			t.Errorf("after the downgrade: transport %s, want rest_api", ci.Contract.TransportMethod.Protocol)
		}
	})
	t.Run("row 3: high never lowered (TP-NEG004)", func(t *testing.T) {
		we := refused(t, a, noCrypto, negotiate.Request{PreferredSecurityLevel: negotiate.High}, wire.CodeNegSecurity)
		if we.Details["max_security_level"] != string(negotiate.Standard) || we.Details["alternative_proposal"] != nil {
			t.Errorf("details = %v, want the responder's maximum and no alternative", we.Details)
		}
		if list, _, _ := noCrypto.a.Contracts().List(contracts.Query{Peer: a.id()}); len(list) != 0 {
			t.Errorf("the responder stored %d contracts for a refusal", len(list))
		}
		// The requester decides to ask for less, explicitly.
		ci := negotiated(t, a, noCrypto, negotiate.Request{PreferredSecurityLevel: negotiate.Standard})
		if ci.Contract.SecurityLevel != negotiate.Standard {
			t.Errorf("security_level = %s, want standard", ci.Contract.SecurityLevel)
		}
	})
	t.Run("row 1: tier 1 version differs → tier 2 (TP-NEG005)", func(t *testing.T) {
		we := refused(t, a, withLLM, negotiate.Request{CandidateTiers: []negotiate.Tier{negotiate.Tier1},
			Capability: &negotiate.CapabilityRef{CapabilityID: tel.CapabilityID, Version: "2.0.0", DescriptorHash: tel.Hash()}}, wire.CodeNegTier1Mismatch)
		alt := alternative(t, we)
		if !slices.Equal(alt.CandidateTiers, []negotiate.Tier{negotiate.Tier2, negotiate.Tier3}) {
			t.Fatalf("alternative tiers = %v, want tier 2 then tier 3", alt.CandidateTiers)
		}
		ci := negotiated(t, a, withLLM, negotiate.Request{CandidateTiers: alt.CandidateTiers[:1]})
		if ci.Contract.CommunicationTier != negotiate.Tier2 {
			t.Errorf("after the downgrade: %s, want tier 2", ci.Contract.CommunicationTier)
		}
	})
	t.Run("row 2: tier 2 without an LLM → tier 3 (TP-NEG006)", func(t *testing.T) {
		we := refused(t, a, plain, negotiate.Request{CandidateTiers: []negotiate.Tier{negotiate.Tier2}}, wire.CodeNegNoLLM)
		alt := alternative(t, we)
		if !slices.Equal(alt.CandidateTiers, []negotiate.Tier{negotiate.Tier3}) {
			t.Fatalf("alternative tiers = %v, want tier 3", alt.CandidateTiers)
		}
		ci := negotiated(t, a, plain, negotiate.Request{CandidateTiers: alt.CandidateTiers})
		if ci.Contract.CommunicationTier != negotiate.Tier3 {
			t.Errorf("after the downgrade: %s, want tier 3", ci.Contract.CommunicationTier)
		}
	})
	t.Run("across systems high is required (TP-NEG004 without it)", func(t *testing.T) {
		other := startPeer(t, "elsewhere", inSystem("other"), func(c *agent.Config) { c.Negotiation.MaxSecurityLevel = string(negotiate.Standard) })
		pair(t, a, other)
		refused(t, a, other, negotiate.Request{}, wire.CodeNegSecurity)
	})
}

// TestNegotiateTimeout: a peer that never answers is asked 1 + retries
// times, each attempt bounded, then TP-NEG020.
func TestNegotiateTimeout(t *testing.T) {
	a := startPeer(t, "requester", func(c *agent.Config) { c.Negotiation.TimeoutMS = 100 })
	b := startPeer(t, "silent")
	pair(t, a, b)
	b.stop()
	var attempts atomic.Int32
	ln, err := net.Listen("tcp", b.addr())
	if err != nil {
		t.Fatal(err)
	}
	hang := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == peer.MessagePath {
			attempts.Add(1)
		}
		<-r.Context().Done() // never answers
	})}
	go func() { _ = hang.Serve(ln) }()
	t.Cleanup(func() { _ = hang.Close() })

	start := time.Now()
	_, err = a.a.Network.Negotiate(context.Background(), b.id(), negotiate.Request{})
	we := wantCode(t, err, wire.CodeNegTimeout)
	if we.Status() != http.StatusGatewayTimeout {
		t.Errorf("status %d, want 504", we.Status())
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 10*time.Second {
		t.Errorf("took %v, want about 4 × 100 ms", d)
	}
	// On a slow CPU (qemu) the server may read an abandoned attempt's
	// request after the client gave up on it: wait for all four.
	testutil.Eventually(t, 5*time.Second, "1 + 3 attempts at the server", func() bool { return attempts.Load() >= 4 })
	if got := attempts.Load(); got != 4 {
		t.Errorf("attempts = %d, want 1 + 3 retries", got)
	}
}

// TestRevokeTellsPairedPeersOnly: revoking a contract queues the
// revocation for its peer in the same transaction while the peer is
// paired; once the peer is unpaired it is revoked here alone, with nothing
// queued for an agent this one no longer talks to.
func TestRevokeTellsPairedPeersOnly(t *testing.T) {
	a := startPeer(t, "requester")
	b := startPeer(t, "responder")
	pair(t, a, b)
	c1 := negotiated(t, a, b, negotiate.Request{}).Contract.ContractID
	c2 := negotiated(t, a, b, negotiate.Request{}).Contract.ContractID
	bID := b.id()
	b.stop() // nothing is delivered: what is queued stays queued
	revocations := func() int {
		n := 0
		for _, state := range []outbox.State{outbox.Pending, outbox.Dead} {
			for _, e := range outboxOf(t, a.a, state) {
				if e.Peer == bID && e.Type == string(wire.MsgNegotiateRequest) {
					n++
				}
			}
		}
		return n
	}
	if _, err := a.a.Contracts().Revoke(context.Background(), c1); err != nil {
		t.Fatal(err)
	}
	if n := revocations(); n != 1 {
		t.Fatalf("%d revocations queued for the paired peer, want 1", n)
	}
	if err := a.a.Pairing().RemovePeer(context.Background(), bID); err != nil {
		t.Fatal(err)
	}
	ci, err := a.a.Contracts().Revoke(context.Background(), c2)
	if err != nil || ci.Status != negotiate.StatusRevoked || ci.RevokedBy != "local" {
		t.Fatalf("Revoke after unpairing = %+v, %v; want revoked here", ci, err)
	}
	if n := revocations(); n != 1 {
		t.Errorf("%d revocations in the outbox, want the first one only: the unpaired peer is not told", n)
	}
}
