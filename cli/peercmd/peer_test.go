package peercmd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
)

// skipWithoutRoute skips the test when the agent answered 404 "no route":
// the server side of route is not there yet.
func skipWithoutRoute(t *testing.T, code int, errOut, route string) {
	t.Helper()
	if code == cli.ExitFailure && strings.Contains(errOut, "(404)") && strings.Contains(errOut, "no route") {
		t.Skipf("the agent has no route %s yet (the P2P server side has not landed): %s", route, strings.TrimSpace(errOut))
	}
}

func TestE2EPeers(t *testing.T) {
	a, b := clitest.P2PAgent(t, &synapseBin), clitest.P2PAgent(t, &synapseBin)
	idA, idB := clitest.Identity(t, a), clitest.Identity(t, b)

	code, out, errOut := clitest.At(t, a, "", "peer", "add", b.URL)
	skipWithoutRoute(t, code, errOut, "POST /api/v1/synapse/agents")
	if code != cli.ExitOK {
		t.Fatalf("peer add: exit %d\n%s", code, errOut)
	}
	t.Run("add prints the pinned identity", func(t *testing.T) {
		for key, want := range map[string]string{
			"agent_id": idB.AgentID, "system_id": idB.SystemID, "endpoint": b.URL,
			"key fingerprint": client.KeyFingerprint(idB.PublicKey),
		} {
			if got := clitest.KVValue(t, out, key); got != want {
				t.Errorf("%s = %q, want %q", key, got, want)
			}
		}
		if !strings.HasPrefix(clitest.KVValue(t, out, "key fingerprint"), "SHA256:") {
			t.Errorf("fingerprint %q is not SHA256:...", clitest.KVValue(t, out, "key fingerprint"))
		}
	})
	t.Run("add the other way", func(t *testing.T) {
		p := clitest.Decode[client.Peer](t, clitest.Must(t, b, "", "peer", "add", strings.TrimPrefix(a.URL, "http://"), "--json"))
		if p.AgentID != idA.AgentID || p.PublicKey != idA.PublicKey || p.Endpoint != a.URL {
			t.Errorf("peer = %+v, want %s at %s with its key", p, idA.AgentID, a.URL)
		}
	})
	t.Run("list", func(t *testing.T) {
		out := clitest.Must(t, a, "", "peer", "list")
		if !strings.HasPrefix(out, "AGENT ID") || !strings.Contains(out, idB.AgentID+"  "+b.URL) {
			t.Errorf("peer list lacks %s at %s:\n%s", idB.AgentID, b.URL, out)
		}
		got := clitest.Decode[struct{ Agents []client.Peer }](t, clitest.Must(t, b, "", "peer", "list", "--json"))
		if len(got.Agents) != 1 || got.Agents[0].AgentID != idA.AgentID || got.Agents[0].Status == "" {
			t.Errorf("peer list --json on b = %+v, want a with a status", got.Agents)
		}
	})
	t.Run("bad endpoint", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "peer", "add", clitest.ClosedAgent(t))
		if code != cli.ExitFailure || !strings.Contains(errOut, "synapse peer add:") {
			t.Errorf("exit %d, stderr %q; want 1 with the agent's error", code, errOut)
		}
	})

	t.Run("outbox", func(t *testing.T) {
		code, out, errOut := clitest.At(t, a, "", "outbox", "list")
		skipWithoutRoute(t, code, errOut, "GET /api/v1/synapse/outbox")
		if code != cli.ExitOK || !strings.HasPrefix(out, "ID  DESTINATION  TYPE  ATTEMPTS  NEXT ATTEMPT  LAST ERROR") {
			t.Fatalf("outbox list: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// With b stopped, a task for it fails delivery and, with no
		// retries configured, becomes a dead letter at once.
		b.Stop(t)
		clitest.Must(t, a, "", "task", "submit", "echo", "--payload", `{"msg":"for b"}`, "--target", idB.AgentID)
		item := waitDeadLetter(t, a, idB.AgentID)
		if item.Attempts < 1 || item.LastError == "" || !strings.HasPrefix(item.Type, "p2p:") {
			t.Errorf("dead letter = %+v, want a p2p message with attempts and an error", item)
		}
		out = clitest.Must(t, a, "", "outbox", "list", "--dead")
		if !strings.Contains(out, "DEAD SINCE") || !strings.Contains(out, item.ID+"  "+idB.AgentID+"  "+item.Type) {
			t.Errorf("outbox list --dead lacks %s:\n%s", item.ID, out)
		}

		out = clitest.Must(t, a, "", "outbox", "retry", item.ID)
		if !strings.HasPrefix(out, "requeued message "+item.ID+" (pending") {
			t.Errorf("outbox retry: %q", out)
		}
		item = waitDeadLetter(t, a, idB.AgentID) // b is still away
		out = clitest.Must(t, a, "", "outbox", "retry", "--peer", idB.AgentID, "--json")
		if n := clitest.Decode[struct{ Requeued int }](t, out).Requeued; n < 1 {
			t.Errorf("outbox retry --peer requeued %d, want at least 1:\n%s", n, out)
		}
		item = waitDeadLetter(t, a, idB.AgentID)
		if out := clitest.Must(t, a, "", "outbox", "drop", item.ID); out != "dropped message "+item.ID+"\n" {
			t.Errorf("outbox drop: %q", out)
		}
		for _, args := range [][]string{{"outbox", "list", "--json"}, {"outbox", "list", "--dead", "--json"}} {
			if out := clitest.Must(t, a, "", args...); strings.Contains(out, item.ID) {
				t.Errorf("%s still shows the dropped %s:\n%s", strings.Join(args, " "), item.ID, out)
			}
		}
		code, _, errOut = clitest.At(t, a, "", "outbox", "drop", item.ID)
		if code != cli.ExitFailure || !strings.Contains(errOut, "not_found (404)") {
			t.Errorf("second drop: exit %d, stderr %q; want 1 and not_found", code, errOut)
		}
	})

	t.Run("remove", func(t *testing.T) {
		if out := clitest.Must(t, a, "", "peer", "remove", idB.AgentID); out != "removed peer "+idB.AgentID+"\n" {
			t.Errorf("peer remove: %q", out)
		}
		if out := clitest.Must(t, a, "", "peer", "list"); strings.Contains(out, idB.AgentID) {
			t.Errorf("peer list still shows %s:\n%s", idB.AgentID, out)
		}
		code, _, errOut := clitest.At(t, a, "", "peer", "remove", idB.AgentID)
		if code != cli.ExitFailure || !strings.Contains(errOut, "not_found (404)") {
			t.Errorf("second remove: exit %d, stderr %q; want 1 and not_found", code, errOut)
		}
	})
}

// waitDeadLetter polls outbox list --dead --peer until it holds an item.
func waitDeadLetter(t *testing.T, a *agenttest.Agent, peer string) client.OutboxItem {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got := clitest.Decode[struct{ Items []client.OutboxItem }](t, clitest.Must(t, a, "", "outbox", "list", "--dead", "--peer", peer, "--json"))
		for _, it := range got.Items {
			if it.Peer == peer && it.State == client.OutboxDead {
				return it
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter for %s after 15s; pending:\n%s", peer, clitest.Must(t, a, "", "outbox", "list"))
		}
		<-tick.C
	}
}
