// Package peernode runs agents as peer nodes inside a test process: each
// node is a real agent with its peer network on a fresh data directory,
// served by the real HTTP API on a loopback port, with that address as its
// endpoint so that other nodes can pair it. A node keeps its address across restarts (peers pin
// the endpoint) and can run the group and human-in-the-loop managers beside
// the agent, as synapse serve wires them.
//
//	a := peernode.Start(t, peernode.Options{Name: "a"})
//	b := peernode.Start(t, peernode.Options{Name: "b", Groups: true})
//	peernode.Pair(t, a, b)
//	b.Restart() // same data directory, same address
//
// Every node is stopped when the test ends.
package peernode

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/tier1test"
	"github.com/synapse-edge/synapse/internal/testutil/wiretest"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/tier1"
)

// AdminToken is the admin token of a node when Options.AdminToken is "".
const AdminToken = "peer-admin"

// Time limits.
const (
	// relistenTimeout bounds the wait for the address after a restart: the
	// old socket may linger a moment.
	relistenTimeout = 5 * time.Second
	// stopTimeout bounds the shutdown of server, manager and agent.
	stopTimeout = 10 * time.Second
)

// Options configure a node.
type Options struct {
	// Name is the agent's name (agent.Config.AgentName).
	Name string
	// AdminToken is the admin token; "" is AdminToken.
	AdminToken string
	// Config tweaks the configuration (after the defaults, the data
	// directory, the name and the token are set).
	Config []func(*agent.Config)
	// Agent are options of agent.New, such as a clock. Without a Tier1,
	// the node runs tier 1 of the section Tier1 gives (package
	// tier1test).
	Agent agent.Options
	// Tier1 tweaks the tier1 section (after its defaults).
	Tier1 []func(*tier1.Config)
	// Peer are options of peer.New: the p2p and registry sections.
	Peer peer.Options
	// HandlerConfig is the handlers of the config file, registered as
	// synapse serve does (the zero value: the built-in ones).
	HandlerConfig handlers.Config
	// Handlers are registered before the agent opens, after those of
	// HandlerConfig.
	Handlers []agent.Handler
	// Groups runs a group.Manager and serves its routes.
	Groups bool
	// HIL, when not nil, runs a hil.Manager with these options and serves
	// its routes.
	HIL *hil.Options
	// Reloader, if set, builds the server's reloader of a config file
	// for the agent (package cli/reload), at each start.
	Reloader func(a *agent.Agent) httpapi.Reloader
	// Exports, if set, builds the server's tier-1 exports once the agent
	// is open.
	Exports func(a *agent.Agent, t1 *tier1.Service) httpapi.Exports
}

// Node is an agent served over HTTP. Agent, Groups and Server are new
// after each Restart; Config keeps the data directory and the address.
type Node struct {
	// Config is the agent's configuration; Listen and Endpoint are the
	// node's address.
	Config agent.Config
	// Agent is the open agent.
	Agent *agent.Agent
	// Network is the agent's peer network.
	Network *peer.Network
	// Tier1 is the agent's tier 1.
	Tier1 *tier1.Service
	// Groups is the started group manager; nil without Options.Groups.
	Groups *group.Manager
	// HIL is the started human-in-the-loop manager; nil without
	// Options.HIL.
	HIL *hil.Manager
	// Server serves Agent and Network (and Groups).
	Server *httpapi.Server

	t        testing.TB
	opts     Options
	addr     string
	ln       net.Listener
	served   chan struct{} // closed when Serve returned, with serveErr
	serveErr error
	up       bool
}

// Start opens a node on a fresh data directory and a free loopback port
// and serves it; it is stopped when the test ends.
func Start(t testing.TB, opts Options) *Node {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = opts.AdminToken
	if cfg.AdminToken == "" {
		cfg.AdminToken = AdminToken
	}
	cfg.AgentName = opts.Name
	for _, f := range opts.Config {
		f(&cfg)
	}
	n := &Node{Config: cfg, t: t, opts: opts}
	n.Open()
	t.Cleanup(n.Stop)
	return n
}

// Open opens a stopped node again: it listens on the node's address,
// opens the agent (on the same data directory, with that address as its
// endpoint), starts the managers and serves.
func (n *Node) Open() {
	t := n.t
	t.Helper()
	if n.up {
		t.Fatalf("%s: Open of a node that is up", n.opts.Name)
	}
	addr := n.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	testutil.Eventually(t, relistenTimeout, "the address "+addr+" to be free", func() bool {
		ln, err = net.Listen("tcp", addr)
		return err == nil
	})
	n.addr = ln.Addr().String()
	n.Config.Listen, n.Config.Endpoint = n.addr, "http://"+n.addr
	aopts, t1 := tier1test.Options(t, wiretest.Options(t, n.Config, n.opts.Agent), n.opts.Tier1...)
	a, err := agent.New(n.Config, aopts)
	if err != nil {
		ln.Close()
		t.Fatalf("%s: agent.New: %v", n.opts.Name, err)
	}
	nw, err := peer.New(a, n.opts.Peer)
	if err != nil {
		ln.Close()
		t.Fatalf("%s: peer.New: %v", n.opts.Name, err)
	}
	if err := handlers.Register(a, handlers.Options{Config: n.opts.HandlerConfig}); err != nil {
		ln.Close()
		t.Fatalf("%s: handlers.Register: %v", n.opts.Name, err)
	}
	for _, h := range n.opts.Handlers {
		if err := a.Handle(h); err != nil {
			ln.Close()
			t.Fatalf("%s: Handle(%s): %v", n.opts.Name, h.Type.Type, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := a.Open(ctx); err != nil {
		ln.Close()
		t.Fatalf("%s: agent.Open: %v", n.opts.Name, err)
	}
	var gm *group.Manager
	if n.opts.Groups {
		gm = group.New(a, nw, group.Options{})
		if err := gm.Start(ctx); err != nil {
			ln.Close()
			_ = a.Close(ctx)
			t.Fatalf("%s: group Start: %v", n.opts.Name, err)
		}
	}
	var hm *hil.Manager
	if n.opts.HIL != nil {
		hm = hil.New(a, *n.opts.HIL)
		if err := hm.Start(ctx); err != nil {
			ln.Close()
			if gm != nil {
				_ = gm.Close(ctx)
			}
			_ = a.Close(ctx)
			t.Fatalf("%s: hil Start: %v", n.opts.Name, err)
		}
	}
	n.Agent, n.Network, n.Tier1, n.Groups, n.HIL = a, nw, t1, gm, hm
	hopts := httpapi.Options{Version: "test", Groups: gm, HIL: hm, Network: nw, Tier1: t1}
	if n.opts.Exports != nil {
		hopts.Exports = n.opts.Exports(a, t1)
	}
	if n.opts.Reloader != nil {
		hopts.Reloader = n.opts.Reloader(a)
	}
	n.Server = httpapi.New(a, hopts)
	served := make(chan struct{})
	n.ln, n.served = ln, served
	go func(srv *httpapi.Server) {
		defer close(served)
		n.serveErr = srv.Serve(ln)
	}(n.Server)
	n.up = true
}

// Stop shuts the server down (Serve must then return nil), then closes the
// managers and the agent, failing the test on an error; it is safe to call
// twice.
func (n *Node) Stop() {
	if !n.up {
		return
	}
	n.up = false
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := n.Server.Shutdown(ctx); err != nil {
		n.t.Errorf("%s: Shutdown: %v", n.opts.Name, err)
	}
	select {
	case <-n.served:
		if n.serveErr != nil {
			n.t.Errorf("%s: Serve: %v", n.opts.Name, n.serveErr)
		}
	case <-ctx.Done():
		n.t.Errorf("%s: Serve did not return after Shutdown", n.opts.Name)
	}
	if n.HIL != nil {
		if err := n.HIL.Close(ctx); err != nil {
			n.t.Errorf("%s: hil Close: %v", n.opts.Name, err)
		}
	}
	if n.Groups != nil {
		if err := n.Groups.Close(ctx); err != nil {
			n.t.Errorf("%s: group Close: %v", n.opts.Name, err)
		}
	}
	if err := n.Agent.Close(ctx); err != nil {
		n.t.Errorf("%s: agent Close: %v", n.opts.Name, err)
	}
}

// Restart stops the node and opens it again on the same data directory
// and address.
func (n *Node) Restart() {
	n.t.Helper()
	n.Stop()
	n.Open()
}

// Up reports whether the node is serving (started and not stopped).
func (n *Node) Up() bool { return n.up }

// Name is the agent's name.
func (n *Node) Name() string { return n.opts.Name }

// ID is the agent's id.
func (n *Node) ID() string { return n.Agent.Identity().AgentID }

// Addr is the node's address, 127.0.0.1:PORT.
func (n *Node) Addr() string { return n.addr }

// URL is the node's endpoint, http://127.0.0.1:PORT.
func (n *Node) URL() string { return "http://" + n.addr }

// Pair makes a and b peers of each other (each pins the other's identity).
func Pair(t testing.TB, a, b *Node) {
	t.Helper()
	for _, x := range [][2]*Node{{a, b}, {b, a}} {
		if _, _, err := x[0].Network.Pairing().AddPeer(context.Background(), x[1].URL()); err != nil {
			t.Fatalf("%s AddPeer(%s): %v", x[0].opts.Name, x[1].URL(), err)
		}
	}
}
