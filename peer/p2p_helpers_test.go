package peer_test

import (
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
)

// peerToken is the admin token of the agents startPeer runs.
const peerToken = "peer-admin"

// peerNode is a peer node (peernode: an agent, its peer network and the
// HTTP API on a loopback address that stays the same across restarts, as
// peers pin the endpoint) under the short names the tests use: a is the
// agent and network as one value, set again at each open.
type peerNode struct {
	*peernode.Node
	cfg agent.Config
	a   *node
}

// startPeer opens an agent named name on a fresh data directory and serves
// it; mutate tweaks the configuration. It is stopped when the test ends.
func startPeer(t testing.TB, name string, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	return startPeerWith(t, name, agent.Options{}, mutate...)
}

// startPeerWith is startPeer with agent options (a clock).
func startPeerWith(t testing.TB, name string, opts agent.Options, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	return startPeerNode(t, peernode.Options{Name: name, Config: mutate, Agent: opts})
}

// startPeerNet is startPeer with the network's options (its p2p and
// registry sections).
func startPeerNet(t testing.TB, name string, net peer.Options, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	return startPeerNode(t, peernode.Options{Name: name, Config: mutate, Peer: net})
}

// startPeerNode runs the peer node of opts with the admin token peerToken.
func startPeerNode(t testing.TB, opts peernode.Options) *peerNode {
	t.Helper()
	opts.AdminToken = peerToken
	n := &peerNode{Node: peernode.Start(t, opts)}
	n.sync()
	return n
}

func (n *peerNode) sync() { n.cfg, n.a = n.Config, &node{n.Agent, n.Network} }

// open opens a stopped node again on its data directory and address.
func (n *peerNode) open() {
	n.Open()
	n.sync()
}

// stop shuts the server down and closes the agent; safe to call twice.
func (n *peerNode) stop() { n.Stop() }

func (n *peerNode) id() string  { return n.ID() }
func (n *peerNode) url() string { return n.URL() }

// pair makes a and b peers of each other.
func pair(t testing.TB, a, b *peerNode) {
	t.Helper()
	peernode.Pair(t, a.Node, b.Node)
}

// outbox lists every item of one state (pending or dead).
func outboxOf(t testing.TB, a *node, state outbox.State) []peer.OutboxEntry {
	t.Helper()
	return tasktest.Outbox(t, a.Network, state)
}
