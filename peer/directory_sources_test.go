package peer_test

import (
	"context"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// A directory source's agents are listed after the registry's, marked
// with the source's name, selected by the same query; one whose key is
// not the key pinned for a paired peer is left out.
func TestDirectorySources(t *testing.T) {
	a, b := startPeer(t, "src-a"), startPeer(t, "src-b")
	pair(t, a, b)
	idB := b.a.Identity()
	entry := func(id, key, status string, caps ...string) peer.DirectoryEntry {
		return peer.DirectoryEntry{AgentID: id, PublicKey: key, Status: status, Endpoint: "mqtt:///" + id,
			AgentCapabilities: &wire.AgentCapabilities{AgentID: id, SupportedTaskTypes: []wire.SupportedTaskType{{Type: "scan", Capabilities: caps}}}}
	}
	var listed []peer.DirectoryEntry
	a.a.Directory().AddSource("mqtt", func() []peer.DirectoryEntry { return listed })
	listed = []peer.DirectoryEntry{
		entry("gw-1", "a2V5MQ==", peer.PeerOnline, "imaging"),
		entry("gw-2", "a2V5Mg==", peer.PeerOffline),
		entry(idB.AgentID, idB.PublicKey, peer.PeerOnline, "imaging"),
		entry(idB.AgentID, "bm90IHRoZSBwaW5uZWQga2V5", peer.PeerOnline, "imaging"), // another key than pinned
		{AgentID: "gw-3", Status: peer.PeerOnline},                                 // no capabilities
		entry("bad/id", "a2V5Mw==", peer.PeerOnline, "imaging"),
	}
	list, err := a.a.Directory().FindByCapability(peer.DirectoryQuery{Capability: "imaging"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); len(got) != 2 || got[0] != "gw-1" || got[1] != idB.AgentID {
		t.Fatalf("capability imaging: %v", got)
	}
	for _, e := range list {
		if e.Source != "mqtt" {
			t.Errorf("%s: source %q", e.AgentID, e.Source)
		}
		if e.AgentID == idB.AgentID && e.PublicKey != idB.PublicKey {
			t.Errorf("an entry with another key than the pinned one is listed: %+v", e)
		}
	}
	if got := find(t, a.a, peer.DirectoryQuery{Status: peer.PeerOffline}); len(got) != 1 || got[0] != "gw-2" {
		t.Fatalf("status offline: %v", got)
	}
	if got := find(t, a.a, peer.DirectoryQuery{TaskType: "ocr"}); len(got) != 0 {
		t.Fatalf("task_type ocr: %v", got)
	}

	// A registered agent comes first, marked as the registry's.
	x := newRegistrant(t, "sys_x_agent")
	if _, err := a.a.Directory().Register(context.Background(), x.envelope(t, x.registration(wire.StandardInterfaces), time.Now())); err != nil {
		t.Fatal(err)
	}
	list, err = a.a.Directory().FindByCapability(peer.DirectoryQuery{Capability: "imaging"})
	if err != nil || len(list) != 3 || list[0].AgentID != x.id || list[0].Source != peer.SourceRegistry {
		t.Fatalf("with a registered agent: %v %v", ids(list), err)
	}
}
