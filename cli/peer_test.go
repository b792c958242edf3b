package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
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

// identity fetches the public identity of a running agent.
func identity(t *testing.T, a *agenttest.Agent) *client.Identity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := client.New(a.URL, a.Token).Identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// p2pAgent starts an agent whose outbox gives up after the first failed
// delivery.
func p2pAgent(t *testing.T) *agenttest.Agent {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"p2p":{"max_retries":0,"retry_base_delay_ms":20}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return agenttest.Start(t, synapseBin.Path(t), agenttest.Options{Args: []string{"--config", cfg}})
}

func TestE2EPeers(t *testing.T) {
	a, b := p2pAgent(t), p2pAgent(t)
	idA, idB := identity(t, a), identity(t, b)

	code, out, errOut := cliAt(t, a, "", "peer", "add", b.URL)
	skipWithoutRoute(t, code, errOut, "POST /api/v1/synapse/agents")
	if code != cli.ExitOK {
		t.Fatalf("peer add: exit %d\n%s", code, errOut)
	}
	t.Run("add prints the pinned identity", func(t *testing.T) {
		for key, want := range map[string]string{
			"agent_id": idB.AgentID, "system_id": idB.SystemID, "endpoint": b.URL,
			"key fingerprint": client.KeyFingerprint(idB.PublicKey),
		} {
			if got := kvValue(t, out, key); got != want {
				t.Errorf("%s = %q, want %q", key, got, want)
			}
		}
		if !strings.HasPrefix(kvValue(t, out, "key fingerprint"), "SHA256:") {
			t.Errorf("fingerprint %q is not SHA256:...", kvValue(t, out, "key fingerprint"))
		}
	})
	t.Run("add the other way", func(t *testing.T) {
		p := decode[client.Peer](t, mustCLI(t, b, "", "peer", "add", strings.TrimPrefix(a.URL, "http://"), "--json"))
		if p.AgentID != idA.AgentID || p.PublicKey != idA.PublicKey || p.Endpoint != a.URL {
			t.Errorf("peer = %+v, want %s at %s with its key", p, idA.AgentID, a.URL)
		}
	})
	t.Run("list", func(t *testing.T) {
		out := mustCLI(t, a, "", "peer", "list")
		if !strings.HasPrefix(out, "AGENT ID") || !strings.Contains(out, idB.AgentID+"  "+b.URL) {
			t.Errorf("peer list lacks %s at %s:\n%s", idB.AgentID, b.URL, out)
		}
		got := decode[struct{ Agents []client.Peer }](t, mustCLI(t, b, "", "peer", "list", "--json"))
		if len(got.Agents) != 1 || got.Agents[0].AgentID != idA.AgentID || got.Agents[0].Status == "" {
			t.Errorf("peer list --json on b = %+v, want a with a status", got.Agents)
		}
	})
	t.Run("bad endpoint", func(t *testing.T) {
		code, _, errOut := cliAt(t, a, "", "peer", "add", closedAgent(t))
		if code != cli.ExitFailure || !strings.Contains(errOut, "synapse peer add:") {
			t.Errorf("exit %d, stderr %q; want 1 with the agent's error", code, errOut)
		}
	})

	t.Run("outbox", func(t *testing.T) {
		code, out, errOut := cliAt(t, a, "", "outbox", "list")
		skipWithoutRoute(t, code, errOut, "GET /api/v1/synapse/outbox")
		if code != cli.ExitOK || !strings.HasPrefix(out, "ID  DESTINATION  TYPE  ATTEMPTS  NEXT ATTEMPT  LAST ERROR") {
			t.Fatalf("outbox list: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		// With b stopped, a task for it fails delivery and, with no
		// retries configured, becomes a dead letter at once.
		b.Stop(t)
		mustCLI(t, a, "", "task", "submit", "echo", "--payload", `{"msg":"for b"}`, "--target", idB.AgentID)
		item := waitDeadLetter(t, a, idB.AgentID)
		if item.Attempts < 1 || item.LastError == "" || !strings.HasPrefix(item.Type, "p2p:") {
			t.Errorf("dead letter = %+v, want a p2p message with attempts and an error", item)
		}
		out = mustCLI(t, a, "", "outbox", "list", "--dead")
		if !strings.Contains(out, "DEAD SINCE") || !strings.Contains(out, item.ID+"  "+idB.AgentID+"  "+item.Type) {
			t.Errorf("outbox list --dead lacks %s:\n%s", item.ID, out)
		}

		out = mustCLI(t, a, "", "outbox", "retry", item.ID)
		if !strings.HasPrefix(out, "requeued message "+item.ID+" (pending") {
			t.Errorf("outbox retry: %q", out)
		}
		item = waitDeadLetter(t, a, idB.AgentID) // b is still away
		out = mustCLI(t, a, "", "outbox", "retry", "--peer", idB.AgentID, "--json")
		if n := decode[struct{ Requeued int }](t, out).Requeued; n < 1 {
			t.Errorf("outbox retry --peer requeued %d, want at least 1:\n%s", n, out)
		}
		item = waitDeadLetter(t, a, idB.AgentID)
		if out := mustCLI(t, a, "", "outbox", "drop", item.ID); out != "dropped message "+item.ID+"\n" {
			t.Errorf("outbox drop: %q", out)
		}
		for _, args := range [][]string{{"outbox", "list", "--json"}, {"outbox", "list", "--dead", "--json"}} {
			if out := mustCLI(t, a, "", args...); strings.Contains(out, item.ID) {
				t.Errorf("%s still shows the dropped %s:\n%s", strings.Join(args, " "), item.ID, out)
			}
		}
		code, _, errOut = cliAt(t, a, "", "outbox", "drop", item.ID)
		if code != cli.ExitFailure || !strings.Contains(errOut, "not_found (404)") {
			t.Errorf("second drop: exit %d, stderr %q; want 1 and not_found", code, errOut)
		}
	})

	t.Run("remove", func(t *testing.T) {
		if out := mustCLI(t, a, "", "peer", "remove", idB.AgentID); out != "removed peer "+idB.AgentID+"\n" {
			t.Errorf("peer remove: %q", out)
		}
		if out := mustCLI(t, a, "", "peer", "list"); strings.Contains(out, idB.AgentID) {
			t.Errorf("peer list still shows %s:\n%s", idB.AgentID, out)
		}
		code, _, errOut := cliAt(t, a, "", "peer", "remove", idB.AgentID)
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
		got := decode[struct{ Items []client.OutboxItem }](t, mustCLI(t, a, "", "outbox", "list", "--dead", "--peer", peer, "--json"))
		for _, it := range got.Items {
			if it.Peer == peer && it.State == client.OutboxDead {
				return it
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dead letter for %s after 15s; pending:\n%s", peer, mustCLI(t, a, "", "outbox", "list"))
		}
		<-tick.C
	}
}
