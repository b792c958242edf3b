package registry_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// open builds a directory over a real store file, at a fixed time, with
// pinned as the keys of its paired peers.
func open(t *testing.T, now *time.Time, pinned map[string]string) *registry.Directory {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	d := registry.New(registry.Options{Now: func() time.Time { return *now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		PinnedKey: func(id string) (string, bool) {
			k, ok := pinned[id]
			return k, ok
		}})
	d.Open(db, "reg")
	return d
}

// signed is a compliant registration of a fresh agent id, signed at at
// with key priv.
func signed(t *testing.T, id string, priv ed25519.PrivateKey, at time.Time, to ...string) *wire.UnifiedSynapseMessage {
	t.Helper()
	caps := wire.DefaultAgentCapabilities()
	caps.AgentID = id
	caps.SupportedTaskTypes = []wire.SupportedTaskType{{Type: "ocr", Capabilities: []string{"imaging"}}}
	reg := &wire.Registration{Identity: wire.Identity{AgentID: id, Endpoint: "http://127.0.0.1:9", ProtocolVersion: "1.0.0",
		PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))},
		Capabilities: caps, Interfaces: wire.StandardInterfaces, HeartbeatIntervalSeconds: 10}
	payload, err := wire.NewJSONPayload(reg)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(wire.MsgRegistryRegister, wire.AgentRef{AgentID: id}, wire.AgentRef{}, payload, at)
	for _, r := range to {
		m.Receiver.AgentID = r
	}
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	raw, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	out, err := wire.DecodeEnvelope(raw, false)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func key(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func code(err error) wire.ErrorCode {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return ""
}

// TestDirectory: a registration is created, renewed, answered as a
// duplicate when replayed, listed, shown offline after three silent
// intervals, and forgotten by Unregister; a key other than the pinned one
// is refused.
func TestDirectory(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	thief := key(t)
	d := open(t, &now, map[string]string{"paired": "a2V5"})
	priv := key(t)
	if _, err := d.Register(ctx, signed(t, "cam-1", priv, now, "other-registry")); code(err) != wire.CodeInvalidParams {
		t.Fatalf("a registration for another registry: %v", err)
	}
	m := signed(t, "cam-1", priv, now, "reg")
	if ans, err := d.Register(ctx, m); err != nil || !ans.Created || ans.Status != registry.Online {
		t.Fatalf("first registration: %+v, %v", ans, err)
	}
	if ans, err := d.Register(ctx, m); err != nil || !ans.Duplicate || ans.Created {
		t.Fatalf("replay: %+v, %v", ans, err)
	}
	now = now.Add(time.Second)
	if ans, err := d.Register(ctx, signed(t, "cam-1", priv, now)); err != nil || ans.Created || ans.Duplicate {
		t.Fatalf("renewal: %+v, %v", ans, err)
	}
	if _, err := d.Register(ctx, signed(t, "cam-1", thief, now.Add(time.Second))); code(err) != wire.CodeInvalidStateChange {
		t.Fatalf("another key for cam-1: %v", err)
	}
	if _, err := d.Register(ctx, signed(t, "paired", thief, now)); code(err) != wire.CodeInvalidStateChange {
		t.Fatalf("another key than the pinned one: %v", err)
	}
	list, err := d.FindByCapability(registry.Query{Capability: "imaging"})
	if err != nil || len(list) != 1 || list[0].AgentID != "cam-1" || list[0].Source != registry.SourceRegistry || list[0].Status != registry.Online {
		t.Fatalf("imaging: %+v, %v", list, err)
	}
	if list, err := d.FindByCapability(registry.Query{Capability: "audio"}); err != nil || len(list) != 0 {
		t.Fatalf("audio: %+v, %v", list, err)
	}
	if _, err := d.FindByCapability(registry.Query{Status: "asleep"}); code(err) != wire.CodeInvalidParams {
		t.Fatalf("status asleep: %v", err)
	}
	now = now.Add(31 * time.Second)
	if e, err := d.Registration("cam-1"); err != nil || e.Status != registry.Offline {
		t.Fatalf("after three intervals: %+v, %v", e, err)
	}
	if err := d.Unregister(ctx, "cam-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Registration("cam-1"); code(err) != wire.CodeNotFound {
		t.Fatalf("after Unregister: %v", err)
	}
	if err := d.Unregister(ctx, "cam-1"); code(err) != wire.CodeNotFound {
		t.Fatalf("Unregister again: %v", err)
	}
}

// TestSources: a source's entries are listed with its name, selected by
// the query; one under another key than the pinned one, without
// capabilities or with a bad agent_id is left out.
func TestSources(t *testing.T) {
	now := time.Now()
	d := open(t, &now, map[string]string{"paired": "a2V5"})
	caps := func(id string) *wire.AgentCapabilities {
		return &wire.AgentCapabilities{AgentID: id, SupportedTaskTypes: []wire.SupportedTaskType{{Type: "scan", Capabilities: []string{"imaging"}}}}
	}
	d.AddSource("mqtt", func() []registry.Entry {
		return []registry.Entry{
			{AgentID: "gw-1", PublicKey: "b3RoZXI=", Status: registry.Online, AgentCapabilities: caps("gw-1")},
			{AgentID: "paired", PublicKey: "a2V5", Status: registry.Online, AgentCapabilities: caps("paired")},
			{AgentID: "paired", PublicKey: "bm90IGl0", Status: registry.Online, AgentCapabilities: caps("paired")},
			{AgentID: "gw-2", Status: registry.Online},
			{AgentID: "bad/id", Status: registry.Online, AgentCapabilities: caps("bad/id")},
		}
	})
	list, err := d.FindByCapability(registry.Query{Capability: "imaging"})
	if err != nil || len(list) != 2 || list[0].AgentID != "gw-1" || list[1].AgentID != "paired" || list[1].PublicKey != "a2V5" || list[0].Source != "mqtt" {
		t.Fatalf("imaging: %+v, %v", list, err)
	}
	if list, err := d.FindByCapability(registry.Query{Status: registry.Offline}); err != nil || len(list) != 0 {
		t.Fatalf("offline: %+v, %v", list, err)
	}
}
