package peer_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/store"
)

// peerToken is the admin token of the agents startPeer runs.
const peerToken = "peer-admin"

// peerNode is an agent served over HTTP on a loopback port that stays the
// same across restarts (peers pin the endpoint).
type peerNode struct {
	t      testing.TB
	cfg    agent.Config
	a      *node
	srv    *httpapi.Server
	opts   []agent.Option
	addr   string
	served chan struct{}
	up     bool
}

// startPeer opens an agent named name on a fresh data directory and serves
// it; mutate tweaks the configuration. It is stopped when the test ends.
func startPeer(t testing.TB, name string, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	return startPeerWith(t, name, nil, mutate...)
}

// startPeerWith is startPeer with agent options (a clock).
func startPeerWith(t testing.TB, name string, opts []agent.Option, mutate ...func(*agent.Config)) *peerNode {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = peerToken
	cfg.AgentName = name
	for _, m := range mutate {
		m(&cfg)
	}
	n := &peerNode{t: t, cfg: cfg, opts: opts}
	n.open()
	t.Cleanup(n.stop)
	return n
}

// open listens (on the previous address after a restart), opens the agent
// with that address as its endpoint and serves it.
func (n *peerNode) open() {
	t := n.t
	t.Helper()
	addr := n.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	for try := 0; try < 50; try++ { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	n.addr = ln.Addr().String()
	n.cfg.Listen, n.cfg.Endpoint = n.addr, "http://"+n.addr
	ag, err := agent.New(n.cfg, n.opts...)
	if err != nil {
		ln.Close()
		t.Fatalf("agent.New: %v", err)
	}
	nw, err := peer.New(ag, peer.Options{})
	if err != nil {
		ln.Close()
		t.Fatalf("peer.New: %v", err)
	}
	a := &node{Agent: ag, Network: nw}
	if err := a.Open(context.Background()); err != nil {
		ln.Close()
		t.Fatalf("Open: %v", err)
	}
	n.a = a
	n.srv = httpapi.New(a.Agent, httpapi.Options{Version: "test", Network: a.Network})
	n.served = make(chan struct{})
	go func(srv *httpapi.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln)
	}(n.srv, n.served)
	n.up = true
}

// stop shuts the server down and closes the agent; safe to call twice.
func (n *peerNode) stop() {
	if !n.up {
		return
	}
	n.up = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.srv.Shutdown(ctx); err != nil {
		n.t.Errorf("Shutdown: %v", err)
	}
	<-n.served
	if err := n.a.Close(ctx); err != nil {
		n.t.Errorf("Close: %v", err)
	}
}

func (n *peerNode) id() string  { return n.a.Identity().AgentID }
func (n *peerNode) url() string { return "http://" + n.addr }

// pair makes a and b peers of each other.
func pair(t testing.TB, a, b *peerNode) {
	t.Helper()
	for _, x := range [][2]*peerNode{{a, b}, {b, a}} {
		if _, _, err := x[0].a.AddPeer(context.Background(), x[1].url()); err != nil {
			t.Fatalf("%s AddPeer(%s): %v", x[0].cfg.AgentName, x[1].url(), err)
		}
	}
}

// outbox lists every item of one state (pending or dead).
func outbox(t testing.TB, a *node, state store.OutboxState) []peer.OutboxEntry {
	t.Helper()
	var all []peer.OutboxEntry
	after := ""
	for page := 0; page < 1000; page++ {
		items, next, err := a.Outbox(peer.OutboxQuery{State: string(state), After: after, Limit: 1000})
		if err != nil {
			t.Fatalf("Outbox(%s): %v", state, err)
		}
		all = append(all, items...)
		if next == "" {
			return all
		}
		after = next
	}
	t.Fatal("Outbox did not end after 1000 pages")
	return nil
}
