package peer_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/peer"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

// registrant is a hand-made agent identity for crafting registrations.
type registrant struct {
	id   string
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

func newRegistrant(t *testing.T, id string) registrant {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return registrant{id: id, pub: pub, priv: priv}
}

// registration is a compliant registration of r with one task type.
func (r registrant) registration(ifaces []wire.ImplementedInterface) *wire.Registration {
	caps := wire.DefaultAgentCapabilities()
	caps.AgentID = r.id
	caps.SupportedTaskTypes = []wire.SupportedTaskType{{Type: "ocr", Name: "OCR", Capabilities: []string{"imaging"}}}
	return &wire.Registration{
		Identity: wire.Identity{AgentID: r.id, PublicKey: base64.StdEncoding.EncodeToString(r.pub),
			Endpoint: "http://127.0.0.1:9", ProtocolVersion: "1.0.0"},
		Capabilities: caps, Interfaces: ifaces, HeartbeatIntervalSeconds: 10, Status: peer.PeerOnline,
	}
}

// envelope signs reg at time at and returns it as a receiver decodes it;
// mutate, if set, changes the envelope before it is signed.
func (r registrant) envelope(t *testing.T, reg *wire.Registration, at time.Time, mutate ...func(*wire.UnifiedSynapseMessage)) *wire.UnifiedSynapseMessage {
	t.Helper()
	payload, err := wire.NewJSONPayload(reg)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(wire.MsgRegistryRegister, wire.AgentRef{AgentID: r.id}, wire.AgentRef{}, payload, at)
	for _, f := range mutate {
		f(m)
	}
	if err := wire.Sign(m, r.priv); err != nil {
		t.Fatal(err)
	}
	raw, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := wire.DecodeEnvelope(raw, false)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// ids lists the agent ids of entries.
func ids(list []peer.DirectoryEntry) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, e.AgentID)
	}
	return out
}

func find(t *testing.T, a *node, q peer.DirectoryQuery) []string {
	t.Helper()
	list, err := a.Directory().FindByCapability(q)
	if err != nil {
		t.Fatalf("FindByCapability(%v): %v", q, err)
	}
	return ids(list)
}

// TestRegistryRefusals registers crafted agents directly with a registry.
func TestRegistryRefusals(t *testing.T) {
	clock := clocktest.New(time.Now().UTC())
	r := startPeerWith(t, "registry", agent.Options{Clock: clock})
	ctx := context.Background()
	x := newRegistrant(t, "sys_x_agent")

	t.Run("lacking basic interfaces", func(t *testing.T) {
		ifaces := slices.DeleteFunc(slices.Clone(wire.StandardInterfaces), func(i wire.ImplementedInterface) bool {
			return i.Name == wire.IfaceIdempotencyHandler || i.Name == wire.IfaceHTTPTransport
		})
		_, err := r.a.Directory().Register(ctx, x.envelope(t, x.registration(ifaces), clock.Now()))
		we := wantCode(t, err, wire.CodeNotCompliant)
		if got, want := we.Details["missing_basics"], []string{"HTTPTransport", "IdempotencyHandler"}; !slices.Equal(got.([]string), want) || we.Status() != 422 {
			t.Errorf("missing_basics = %v (status %d), want %v", got, we.Status(), want)
		}
		if got := find(t, r.a, peer.DirectoryQuery{}); len(got) != 0 {
			t.Errorf("a refused agent is in the directory: %v", got)
		}
	})

	// Addressed to this registry by its agent_id, as a registrar may.
	first := x.envelope(t, x.registration(wire.StandardInterfaces), clock.Now(),
		func(m *wire.UnifiedSynapseMessage) { m.Receiver.AgentID = r.a.Identity().AgentID })
	t.Run("first registration pins the key", func(t *testing.T) {
		ans, err := r.a.Directory().Register(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if !ans.Created || ans.Duplicate || !ans.Compliance.Compliant || ans.Status != peer.PeerOnline || ans.HeartbeatIntervalSeconds != 10 {
			t.Errorf("answer = %+v", ans)
		}
	})
	t.Run("a replay has no effect", func(t *testing.T) {
		clock.Advance(5 * time.Second)
		before, _ := r.a.Directory().Registration(x.id)
		ans, err := r.a.Directory().Register(ctx, first)
		if err != nil || !ans.Duplicate || ans.Created {
			t.Fatalf("replay: %+v, %v; want a duplicate", ans, err)
		}
		after, _ := r.a.Directory().Registration(x.id)
		if after.LastSeen != before.LastSeen {
			t.Errorf("a replay moved last_seen from %s to %s", before.LastSeen, after.LastSeen)
		}
	})
	t.Run("renewal", func(t *testing.T) {
		ans, err := r.a.Directory().Register(ctx, x.envelope(t, x.registration(wire.StandardInterfaces), clock.Now()))
		if err != nil || ans.Created || ans.Duplicate {
			t.Fatalf("renewal: %+v, %v", ans, err)
		}
		e, _ := r.a.Directory().Registration(x.id)
		if e.LastSeen != wire.FormatTime(clock.Now()) {
			t.Errorf("last_seen = %s, want %s", e.LastSeen, wire.FormatTime(clock.Now()))
		}
	})
	t.Run("another key for the same agent_id", func(t *testing.T) {
		thief := newRegistrant(t, x.id)
		_, err := r.a.Directory().Register(ctx, thief.envelope(t, thief.registration(wire.StandardInterfaces), clock.Now()))
		if we := wantCode(t, err, wire.CodeInvalidStateChange); we.Status() != 409 || we.Details["reason"] != "public_key_changed" {
			t.Errorf("other key: %v", we)
		}
		e, _ := r.a.Directory().Registration(x.id)
		if e.PublicKey != base64.StdEncoding.EncodeToString(x.pub) {
			t.Error("the pinned key changed")
		}
		if err := r.a.Directory().Unregister(ctx, x.id); err != nil {
			t.Fatal(err)
		}
		ans, err := r.a.Directory().Register(ctx, thief.envelope(t, thief.registration(wire.StandardInterfaces), clock.Now()))
		if err != nil || !ans.Created {
			t.Errorf("after Unregister the new key is refused: %+v, %v", ans, err)
		}
		wantCode(t, r.a.Directory().Unregister(ctx, "nobody"), wire.CodeNotFound)
	})
	t.Run("the key of a paired peer", func(t *testing.T) {
		p := startPeer(t, "paired")
		if _, _, err := r.a.Pairing().AddPeer(ctx, p.url()); err != nil {
			t.Fatal(err)
		}
		fake := newRegistrant(t, p.id())
		_, err := r.a.Directory().Register(ctx, fake.envelope(t, fake.registration(wire.StandardInterfaces), clock.Now()))
		wantCode(t, err, wire.CodeInvalidStateChange)
	})

	y := newRegistrant(t, "sys_y_agent")
	for _, c := range []struct {
		name   string
		reg    func(*wire.Registration)
		env    func(*wire.UnifiedSynapseMessage)
		signed func(*wire.UnifiedSynapseMessage)
		at     time.Duration
		code   wire.ErrorCode
		status int
	}{
		{name: "payload changed after signing", code: wire.CodeIDUnknownSender, status: 401,
			signed: func(m *wire.UnifiedSynapseMessage) {
				other := y.registration(wire.StandardInterfaces)
				other.Identity.Endpoint = "http://127.0.0.1:10"
				m.Payload, _ = wire.NewJSONPayload(other)
			}},
		{name: "sender is another agent", code: wire.CodeInvalidParams, status: 400,
			env: func(m *wire.UnifiedSynapseMessage) { m.Sender.AgentID = "sys_x_agent" }},
		{name: "capabilities of another agent", code: wire.CodeInvalidParams, status: 400,
			reg: func(r *wire.Registration) { r.Capabilities.AgentID = "sys_x_agent" }},
		{name: "stale timestamp", code: wire.CodeIDStaleTimestamp, status: 401, at: -10 * time.Minute},
		{name: "another protocol MAJOR", code: wire.CodeVerUnsupported, status: 400,
			reg: func(r *wire.Registration) { r.Capabilities.ProtocolVersion = "2.0.0" }},
		{name: "not a registration", code: wire.CodeInvalidParams, status: 400,
			env: func(m *wire.UnifiedSynapseMessage) { m.MessageType = wire.MsgHeartbeat }},
		{name: "no endpoint", code: wire.CodeInvalidParams, status: 400,
			reg: func(r *wire.Registration) { r.Identity.Endpoint = "" }},
		{name: "no capabilities", code: wire.CodeInvalidParams, status: 400,
			reg: func(r *wire.Registration) { r.Capabilities = nil }},
		{name: "heartbeat interval too long", code: wire.CodeInvalidParams, status: 400,
			reg: func(r *wire.Registration) { r.HeartbeatIntervalSeconds = 100_000 }},
		{name: "for another registry", code: wire.CodeInvalidParams, status: 400,
			env: func(m *wire.UnifiedSynapseMessage) { m.Receiver.AgentID = "other_registry" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := y.registration(wire.StandardInterfaces)
			if c.reg != nil {
				c.reg(reg)
			}
			var mutate []func(*wire.UnifiedSynapseMessage)
			if c.env != nil {
				mutate = append(mutate, c.env)
			}
			m := y.envelope(t, reg, clock.Now().Add(c.at), mutate...)
			if c.signed != nil {
				c.signed(m)
			}
			_, err := r.a.Directory().Register(ctx, m)
			if we := wantCode(t, err, c.code); we.Status() != c.status {
				t.Errorf("status %d, want %d", we.Status(), c.status)
			}
			if _, err := r.a.Directory().Registration(y.id); err == nil {
				t.Error("the refused agent is in the directory")
			}
		})
	}
	t.Run("default heartbeat interval", func(t *testing.T) {
		reg := y.registration(wire.StandardInterfaces)
		reg.HeartbeatIntervalSeconds = 0
		ans, err := r.a.Directory().Register(ctx, y.envelope(t, reg, clock.Now()))
		if err != nil || ans.HeartbeatIntervalSeconds != 30 {
			t.Errorf("interval 0: %+v, %v; want 30 s", ans, err)
		}
	})
	t.Run("a newer MINOR with unknown fields is accepted", func(t *testing.T) {
		z := newRegistrant(t, "sys_z_agent")
		reg := z.registration(wire.StandardInterfaces)
		reg.Capabilities.ProtocolVersion = "1.3.0"
		m := z.envelope(t, reg, clock.Now(), func(m *wire.UnifiedSynapseMessage) {
			var obj map[string]any
			raw, _ := json.Marshal(reg)
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			obj["trust_score"] = 0.9
			obj["capabilities"].(map[string]any)["support_quantum"] = true
			m.Payload, _ = wire.NewJSONPayload(obj)
		})
		ans, err := r.a.Directory().Register(ctx, m)
		if err != nil || !ans.Created {
			t.Fatalf("Register = %+v, %v", ans, err)
		}
		if e, _ := r.a.Directory().Registration(z.id); e.ProtocolVersion != "1.3.0" {
			t.Errorf("entry = %+v", e)
		}
	})
	t.Run("bad status filter", func(t *testing.T) {
		_, err := r.a.Directory().FindByCapability(peer.DirectoryQuery{Status: "asleep"})
		wantCode(t, err, wire.CodeInvalidParams)
	})
}

// getAgents queries GET /agents on n with its admin token.
func getAgents(t *testing.T, n *peerNode, query string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, n.url()+"/api/v1/synapse/agents?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+peerToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Agents []peer.DirectoryEntry `json:"agents"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
		t.Fatalf("GET /agents?%s: %d %s", query, resp.StatusCode, body)
	}
	return ids(out.Agents)
}

// TestRegistryThreeAgents runs a registry R and two agents A and B that
// register with it through their configuration.
func TestRegistryThreeAgents(t *testing.T) {
	clock := clocktest.New(time.Now().UTC())
	r := startPeerWith(t, "registry", agent.Options{Clock: clock})
	ctx := context.Background()
	tok, err := r.a.Tokens().Create(ctx, "registrants", []auth.Scope{auth.ScopeRegistryWrite})
	if err != nil {
		t.Fatal(err)
	}
	// A long interval: every registration below is the start or a change.
	const interval = 60
	viaR := peer.Options{Registry: &peer.RegistryConfig{URL: r.url(), Token: tok.Token, HeartbeatIntervalSeconds: interval}}
	a, b := startPeerNet(t, "alpha", viaR), startPeerNet(t, "beta", viaR)
	both := []string{a.id(), b.id()}
	slices.Sort(both)
	testutil.Eventually(t, 10*time.Second, "A and B to register", func() bool { return slices.Equal(find(t, r.a, peer.DirectoryQuery{}), both) })

	t.Run("registered on start", func(t *testing.T) {
		e, err := r.a.Directory().Registration(b.id())
		if err != nil {
			t.Fatal(err)
		}
		if e.Endpoint != b.url() || e.Status != peer.PeerOnline || !e.Compliance.Compliant || e.HeartbeatIntervalSeconds != interval ||
			e.AgentCapabilities.MaxConcurrentTasks != 10 || len(e.Capabilities) == 0 || !slices.Equal(interfaceNames(b.a), names(e.Interfaces)) {
			t.Errorf("B's entry = %+v", e)
		}
	})

	t.Run("a new handler is reported", func(t *testing.T) {
		err := b.a.Handle(agent.Handler{
			Type: wire.SupportedTaskType{Type: "resize", Description: "Resizes images.", Capabilities: []string{"imaging"}},
			Func: func(context.Context, *agent.Run) (any, error) { return nil, nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "B's resize handler to reach the registry", func() bool {
			return slices.Equal(find(t, r.a, peer.DirectoryQuery{TaskType: "resize"}), []string{b.id()})
		})
	})

	t.Run("A finds B through R", func(t *testing.T) {
		for _, c := range []struct {
			query string
			want  []string
		}{
			{"capability=imaging", []string{b.id()}},
			{"task_type=resize&status=online", []string{b.id()}},
			{"capability=resize", []string{b.id()}},
			{"task_type=echo", both},
			{"capability=diagnostics&status=online", both},
			{"capability=imaging&task_type=echo", []string{}},
			{"status=offline", []string{}},
			{"capability=teleport", []string{}},
		} {
			if got := getAgents(t, r, c.query); !slices.Equal(got, c.want) {
				t.Errorf("GET /agents?%s = %v, want %v", c.query, got, c.want)
			}
		}
		if got := getAgents(t, r, ""); len(got) != 0 {
			t.Errorf("GET /agents without a query lists peers, not the directory: %v", got)
		}
	})

	t.Run("offline after three silent intervals", func(t *testing.T) {
		b.stop()
		clock.Advance(3 * interval * time.Second)
		if got := find(t, r.a, peer.DirectoryQuery{Status: peer.PeerOnline}); !slices.Equal(got, both) {
			t.Errorf("online after exactly three intervals = %v, want both", got)
		}
		clock.Advance(time.Millisecond)
		if got := find(t, r.a, peer.DirectoryQuery{Status: peer.PeerOffline}); !slices.Equal(got, both) {
			t.Errorf("offline after three intervals and 1 ms = %v, want both", got)
		}
		// A is alive: its next change brings it back; B stays offline.
		if err := a.a.ProvideInterface(wire.IfaceVotingHandler); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "A to come back online", func() bool {
			return slices.Equal(find(t, r.a, peer.DirectoryQuery{Status: peer.PeerOnline}), []string{a.id()})
		})
		if got := find(t, r.a, peer.DirectoryQuery{Status: peer.PeerOffline}); !slices.Equal(got, []string{b.id()}) {
			t.Errorf("offline = %v, want B", got)
		}
	})

	t.Run("the directory survives a restart", func(t *testing.T) {
		r.stop()
		r.open()
		if got := find(t, r.a, peer.DirectoryQuery{}); !slices.Equal(got, both) {
			t.Errorf("directory after restart = %v, want %v", got, both)
		}
		e, err := r.a.Directory().Registration(a.id())
		if err != nil || !slices.Contains(names(e.Interfaces), "VotingHandler") {
			t.Errorf("A's entry after restart = %+v, %v", e, err)
		}
	})
}

// names lists interface names.
func names(ifaces []wire.ImplementedInterface) []string {
	var out []string
	for _, i := range ifaces {
		out = append(out, i.Name)
	}
	return out
}
