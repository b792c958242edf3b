package contracts_test

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/clocktest"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// The contracts are made between real agents: each test runs peer nodes
// (an agent, its peer network and the HTTP API on a loopback port) and
// pairs them.

// node is an agent with its peer network: the agent's methods and the
// network's on one value, as the tests use them.
type node struct {
	*agent.Agent
	*peer.Network
}

// peerNode is one running peer node.
type peerNode struct {
	n   *peernode.Node
	a   *node
	cfg agent.Config
}

// startPeer runs a peer node named name; mutate tweaks its configuration.
// It is stopped when the test ends.
func startPeer(t testing.TB, name string, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	return startPeerWith(t, name, agent.Options{}, mutate...)
}

// startPeerWith is startPeer with agent options (a clock).
func startPeerWith(t testing.TB, name string, opts agent.Options, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	return startPeerNode(t, peernode.Options{Name: name, Config: mutate, Agent: opts})
}

// startPeerNode is startPeer with the options of the node.
func startPeerNode(t testing.TB, opts peernode.Options) *peerNode {
	t.Helper()
	n := peernode.Start(t, opts)
	return &peerNode{n: n, a: &node{n.Agent, n.Network}, cfg: n.Config}
}

// stop stops the node; safe to call twice.
func (p *peerNode) stop() { p.n.Stop() }

func (p *peerNode) id() string   { return p.n.ID() }
func (p *peerNode) url() string  { return p.n.URL() }
func (p *peerNode) addr() string { return p.n.Addr() }

// pair makes a and b peers of each other.
func pair(t testing.TB, a, b *peerNode) {
	t.Helper()
	peernode.Pair(t, a.n, b.n)
}

// fakeClock is the test clock: time moves only on Advance.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock { return tasktest.NewClock() }

// admin is the principal tests submit as.
var admin = tasktest.Admin

// submitTo submits a task of a for peer b.
func submitTo(t *testing.T, a, b *peerNode, taskType, payload string) *wire.Task {
	t.Helper()
	task, err := a.a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: taskType, Payload: wire.JSONValue(payload), Target: b.id()}, agent.SubmitOptions{})
	if err != nil {
		t.Fatalf("Submit(%s → %s): %v", taskType, b.cfg.AgentName, err)
	}
	if task.Status != wire.StatusPending || task.Target != b.id() {
		t.Fatalf("submitted task is %s for %q, want pending for %s", task.Status, task.Target, b.id())
	}
	return task.Task
}

// waitFinal waits until the task is in a final state.
func waitFinal(t *testing.T, a *node, id string) *wire.Task {
	t.Helper()
	return tasktest.WaitFinal(t, a.Agent, id)
}

// waitStatus polls until the stored task is in status want.
func waitStatus(t *testing.T, a *node, id string, want wire.Status) *wire.Task {
	t.Helper()
	return tasktest.WaitStatus(t, a.Agent, id, want)
}

func describe(task *wire.Task) string { return tasktest.Describe(task) }

// wantCode asserts err is a *wire.Error with code.
func wantCode(t *testing.T, err error, code wire.ErrorCode) *wire.Error {
	t.Helper()
	return tasktest.WantCode(t, err, code)
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	return tasktest.JSONEqual(t, got, want)
}

// peerKey reads n's Ed25519 key from its data directory.
func peerKey(t *testing.T, n *peerNode) ed25519.PrivateKey {
	t.Helper()
	return tasktest.Key(t, n.cfg.DataDir)
}

// outbox lists every item of one state (pending or dead).
func outboxOf(t testing.TB, a *node, state outbox.State) []peer.OutboxEntry {
	t.Helper()
	return tasktest.Outbox(t, a.Network, state)
}

// script is the command line that runs a fixture of testdata/.
func script(t *testing.T, name string) []string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", p}
}

// submit submits a task and fails the test if it is refused.
func submit(t *testing.T, a *node, taskType, payload string) *wire.Task {
	t.Helper()
	return tasktest.Submit(t, a.Agent, admin, taskType, payload)
}
