package peer_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/wire"
)

// interfaceNames lists the names a provider declares.
func interfaceNames(p agent.CapabilitiesProvider) []string {
	var out []string
	for _, i := range p.GetSupportedInterfaces() {
		out = append(out, i.Name)
	}
	return out
}

// startHIL starts a human-in-the-loop manager on a; it is closed before
// the agent when the test ends.
func startHIL(t *testing.T, a *node) {
	t.Helper()
	startHILWith(t, a, hil.Options{})
}

// startHILWith is startHIL with the manager's options.
func startHILWith(t *testing.T, a *node, opts hil.Options) {
	t.Helper()
	hm := hil.New(a.Agent, opts)
	if err := hm.Start(context.Background()); err != nil {
		t.Fatalf("hil Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hm.Close(ctx); err != nil {
			t.Errorf("hil Close: %v", err)
		}
	})
}

// TestInterfacesFollowComponents starts the components of an agent one by
// one and shows that the interfaces, the flags and the compliance follow
// what runs: nothing is declared that is not there.
func TestInterfacesFollowComponents(t *testing.T) {
	cfg := testConfig(t)
	a := openAgent(t, cfg, nil)
	core := []string{"AgentIdentity", "MessageHandler", "CapabilitiesProvider", "P2PTaskHandler",
		"CallbackReceiver", "CallbackSender", "TaskStatusProvider", "HybridTransport"}

	t.Run("agent alone", func(t *testing.T) {
		if got := interfaceNames(a); !slices.Equal(got, core) {
			t.Errorf("interfaces = %v, want %v", got, core)
		}
		c := a.Capabilities()
		if c.SupportStreaming || c.SupportHiL || c.SupportGroups || !c.SupportProgressUpdates {
			t.Errorf("flags streaming=%v hil=%v groups=%v progress=%v, want only progress", c.SupportStreaming, c.SupportHiL, c.SupportGroups, c.SupportProgressUpdates)
		}
		if got, want := c.SupportedTransportModes, []wire.TransportMode{wire.TransportCallback}; !slices.Equal(got, want) {
			t.Errorf("transport modes without HTTP = %v, want %v", got, want)
		}
		if slices.Contains(c.SupportedContentTypes, "multipart/form-data") {
			t.Errorf("content types without the multipart route = %v", c.SupportedContentTypes)
		}
		ev, err := a.Pairing().Compliance(context.Background(), agent.SelfID)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"HTTPTransport", "Authenticator", "IdempotencyHandler"}; ev.Compliant || !slices.Equal(ev.MissingBasics, want) {
			t.Errorf("compliance without HTTP = %+v, want missing %v", ev, want)
		}
	})

	t.Run("with the HTTP server", func(t *testing.T) {
		httpapi.New(a.Agent, httpapi.Options{Network: a.Network})
		want := []string{"AgentIdentity", "MessageHandler", "CapabilitiesProvider", "P2PTaskHandler",
			"CallbackReceiver", "CallbackSender", "TaskStatusProvider", "HTTPTransport", "MultipartTransport",
			"HybridTransport", "StreamingTransport", "Authenticator", "IdempotencyHandler"}
		if got := interfaceNames(a); !slices.Equal(got, want) {
			t.Errorf("interfaces = %v, want %v", got, want)
		}
		c := a.Capabilities()
		if !c.SupportStreaming || c.SupportHiL {
			t.Errorf("flags streaming=%v hil=%v, want streaming only", c.SupportStreaming, c.SupportHiL)
		}
		if got, want := c.SupportedTransportModes, []wire.TransportMode{"callback", "polling", "sync", "hybrid"}; !slices.Equal(got, want) {
			t.Errorf("transport modes = %v, want %v", got, want)
		}
		if got, want := c.SupportedContentTypes, []string{"application/json", "application/msgpack", "multipart/form-data"}; !slices.Equal(got, want) {
			t.Errorf("content types = %v, want %v", got, want)
		}
		ev, _ := a.Pairing().Compliance(context.Background(), a.Identity().AgentID)
		want2 := wire.ComplianceEvaluation{AgentID: a.Identity().AgentID, BasicImplemented: 8, BasicRequired: 8,
			CompleteImplemented: 4, CompleteTotal: 5, AdvancedImplemented: 1, AdvancedTotal: 5, Compliant: true}
		if !reflect.DeepEqual(*ev, want2) {
			t.Errorf("compliance = %+v, want %+v", *ev, want2)
		}
	})

	t.Run("with the HiL manager", func(t *testing.T) {
		startHIL(t, a)
		got := interfaceNames(a)
		if !slices.Contains(got, "HILHandler") || !slices.Contains(got, "EscalationHandler") {
			t.Errorf("interfaces with hil = %v, want HILHandler and EscalationHandler", got)
		}
		if !a.Capabilities().SupportHiL {
			t.Error("support_hil is false with the HiL manager running")
		}
		ev, _ := a.Pairing().Compliance(context.Background(), agent.SelfID)
		if ev.CompleteImplemented != 5 || ev.AdvancedImplemented != 2 {
			t.Errorf("compliance with hil = %+v, want 5 complete and 2 advanced", ev)
		}
		if slices.Contains(got, "GroupManager") || a.Capabilities().SupportGroups {
			t.Error("groups declared, but nothing implements them")
		}
	})

	t.Run("one HiL level and no built-in handlers", func(t *testing.T) {
		b := openAgentWith(t, testConfig(t), handlers.Config{DisableBuiltins: true}, nil)
		startHILWith(t, b, hil.Options{Config: hil.Config{Levels: []hil.Level{{ReviewersScope: auth.ScopeHILL1, DeadlineSeconds: 60}}}})
		got := interfaceNames(b)
		if !slices.Contains(got, "HILHandler") || slices.Contains(got, "EscalationHandler") {
			t.Errorf("interfaces with one level = %v, want HILHandler without EscalationHandler", got)
		}
		if n := len(b.Capabilities().SupportedTaskTypes); n != 0 {
			t.Errorf("%d task types with the built-ins disabled", n)
		}
		ev, _ := b.Pairing().Compliance(context.Background(), agent.SelfID)
		if ev.CompleteImplemented != 4 || ev.AdvancedImplemented != 0 {
			t.Errorf("compliance with one level and no HTTP = %+v, want 4 complete (no multipart) and 0 advanced", ev)
		}
	})
}

func TestProvideInterface(t *testing.T) {
	a := openAgent(t, testConfig(t), nil)
	before := interfaceNames(a)
	t.Run("unknown names are refused", func(t *testing.T) {
		for _, names := range [][]string{{"ConfigProvider"}, {"GroupManager", "Teleporter"}, {""}} {
			if err := a.ProvideInterfaces(names...); !errors.Is(err, agent.ErrUnknownInterface) {
				t.Errorf("ProvideInterfaces(%v) = %v, want ErrUnknownInterface", names, err)
			}
		}
		if got := interfaceNames(a); !slices.Equal(got, before) {
			t.Errorf("after refused names the interfaces are %v, want %v", got, before)
		}
	})
	t.Run("providing twice is one entry, in registry order", func(t *testing.T) {
		for range 2 {
			if err := a.ProvideInterface(wire.IfaceVotingHandler); err != nil {
				t.Fatal(err)
			}
		}
		got := interfaceNames(a)
		if n := len(got); n != len(before)+1 || got[len(got)-1] != "HybridTransport" || got[7] != "VotingHandler" {
			t.Errorf("interfaces = %v", got)
		}
		if !a.ProvidesInterface(wire.IfaceVotingHandler) || a.ProvidesInterface(wire.IfaceGroupManager) {
			t.Error("ProvidesInterface disagrees with what was provided")
		}
	})
}

func TestTaskTypeCapabilities(t *testing.T) {
	a := openAgent(t, testConfig(t), nil, agent.Handler{
		Type:         wire.SupportedTaskType{Type: "resize", Description: "Resizes.", Capabilities: []string{"imaging"}},
		InputSchema:  []byte(`{"type":"object","required":["width"]}`),
		OutputSchema: []byte(`{"type":"object"}`),
		Func:         func(context.Context, *agent.Run) (any, error) { return nil, nil },
	})
	t.Run("registered", func(t *testing.T) {
		tt, err := a.GetTaskTypeCapabilities("resize")
		if err != nil {
			t.Fatal(err)
		}
		if tt.InputSchema != `{"type":"object","required":["width"]}` || tt.OutputSchema != `{"type":"object"}` || tt.Capabilities[0] != "imaging" {
			t.Errorf("resize = %+v", tt)
		}
		tt.Capabilities[0] = "changed"
		again, _ := a.GetTaskTypeCapabilities("resize")
		if again.Capabilities[0] != "imaging" {
			t.Error("changing the answer changed the declaration")
		}
	})
	t.Run("not registered", func(t *testing.T) {
		tt, err := a.GetTaskTypeCapabilities("teleport")
		if tt != nil || !errors.Is(err, agent.ErrTaskTypeUnsupported) {
			t.Errorf("teleport = %+v, %v; want nil, ErrTaskTypeUnsupported", tt, err)
		}
	})
	t.Run("GetCapabilities", func(t *testing.T) {
		c, err := a.GetCapabilities(context.Background())
		if err != nil || c.AgentID != a.Identity().AgentID || c.ProtocolVersion != "1.0.0" {
			t.Fatalf("GetCapabilities = %+v, %v", c, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := a.GetCapabilities(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("GetCapabilities with a cancelled context: %v", err)
		}
	})
}

// TestCompliancePeer evaluates a paired peer from its interface list,
// fetched over HTTP each time.
func TestCompliancePeer(t *testing.T) {
	a, b := startPeer(t, "alpha"), startPeer(t, "beta")
	pair(t, a, b)
	ctx := context.Background()

	ev, err := a.a.Pairing().Compliance(ctx, b.id())
	if err != nil {
		t.Fatal(err)
	}
	want := wire.ComplianceEvaluation{AgentID: b.id(), BasicImplemented: 8, BasicRequired: 8, CompleteImplemented: 4,
		CompleteTotal: 5, AdvancedImplemented: 1, AdvancedTotal: 5, Compliant: true}
	if !reflect.DeepEqual(*ev, want) {
		t.Errorf("compliance of the peer = %+v, want %+v", *ev, want)
	}

	startHIL(t, b.a)
	ev, err = a.a.Pairing().Compliance(ctx, b.id())
	if err != nil || ev.CompleteImplemented != 5 || ev.AdvancedImplemented != 2 {
		t.Errorf("compliance once the peer runs HiL = %+v, %v; want 5 complete, 2 advanced", ev, err)
	}

	_, err = a.a.Pairing().Compliance(ctx, "stranger")
	wantCode(t, err, wire.CodeNotFound)

	c := startPeer(t, "gamma")
	pair(t, a, c)
	c.stop()
	_, err = a.a.Pairing().Compliance(ctx, c.id())
	if we := wantCode(t, err, wire.CodePeerUnreachable); we.Status() != 502 || we.Details["endpoint"] != c.url() {
		t.Errorf("unreachable peer: %v (status %d, details %v)", we, we.Status(), we.Details)
	}
}
