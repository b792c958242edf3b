package group_test

import (
	"context"
	"errors"
	"github.com/synapse-edge/synapse/internal/clocktest"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

// pollTimeout bounds every wait for a state; generous for -race.
const pollTimeout = 20 * time.Second

// fakeClock is the test clock: time moves only on Advance.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	return clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
}

// node is an agent with its group manager, served over HTTP on a
// loopback address that stays the same across restarts (peers pin the
// endpoint).
type node struct {
	t        testing.TB
	name     string
	cfg      agent.Config
	clock    agent.Clock
	handlers []agent.Handler
	a        *agent.Agent
	gm       *group.Manager
	srv      *httpapi.Server
	addr     string
	served   chan struct{}
	up       bool
}

// startNode opens an agent named name with the given clock (nil: the wall
// clock) and extra handlers, and serves it; it is stopped when the test
// ends.
func startNode(t testing.TB, name string, clock agent.Clock, handlers ...agent.Handler) *node {
	t.Helper()
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = "group-admin"
	cfg.AgentName = name
	cfg.P2P.MaxRetries, cfg.P2P.RetryBaseDelayMS, cfg.P2P.HeartbeatIntervalSeconds = 3, 50, 1
	n := &node{t: t, name: name, cfg: cfg, clock: clock, handlers: handlers}
	n.open()
	t.Cleanup(n.stop)
	return n
}

func (n *node) open() {
	t := n.t
	t.Helper()
	addr := n.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for { // the old socket may linger a moment after a restart
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	n.addr = ln.Addr().String()
	n.cfg.Listen, n.cfg.Endpoint = n.addr, "http://"+n.addr
	var opts []agent.Option
	if n.clock != nil {
		opts = append(opts, agent.WithClock(n.clock))
	}
	a, err := agent.New(n.cfg, opts...)
	if err != nil {
		ln.Close()
		t.Fatalf("agent.New: %v", err)
	}
	for _, h := range n.handlers {
		if err := a.Handle(h); err != nil {
			ln.Close()
			t.Fatalf("Handle: %v", err)
		}
	}
	if err := a.Open(context.Background()); err != nil {
		ln.Close()
		t.Fatalf("Open: %v", err)
	}
	gm := group.New(a, group.Options{})
	if err := gm.Start(context.Background()); err != nil {
		ln.Close()
		t.Fatalf("group Start: %v", err)
	}
	n.a, n.gm = a, gm
	n.srv = httpapi.New(a, httpapi.Options{Version: "test", Groups: gm})
	n.served = make(chan struct{})
	go func(srv *httpapi.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln)
	}(n.srv, n.served)
	n.up = true
}

// stop shuts the server, the manager and the agent down; safe twice.
func (n *node) stop() {
	if !n.up {
		return
	}
	n.up = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.srv.Shutdown(ctx); err != nil {
		n.t.Errorf("%s Shutdown: %v", n.name, err)
	}
	<-n.served
	if err := n.gm.Close(ctx); err != nil {
		n.t.Errorf("%s group Close: %v", n.name, err)
	}
	if err := n.a.Close(ctx); err != nil {
		n.t.Errorf("%s Close: %v", n.name, err)
	}
}

func (n *node) restart() {
	n.t.Helper()
	n.stop()
	n.open()
}

func (n *node) id() string  { return n.a.Identity().AgentID }
func (n *node) url() string { return "http://" + n.addr }

// pair makes a and b peers of each other.
func pair(t testing.TB, a, b *node) {
	t.Helper()
	for _, x := range [][2]*node{{a, b}, {b, a}} {
		if _, _, err := x[0].a.AddPeer(context.Background(), x[1].url()); err != nil {
			t.Fatalf("%s AddPeer(%s): %v", x[0].name, x[1].url(), err)
		}
	}
}

// wantCode fails unless err is a *wire.Error with code.
func wantCode(t testing.TB, err error, code string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

// standing is n's standing in a group ("" when it does not know it).
func standing(n *node, groupID string) string {
	g, err := n.gm.Group(groupID)
	if err != nil {
		return ""
	}
	return g.Standing
}

// memberIDs lists the agent ids of n's copy of a group.
func memberIDs(n *node, groupID string) []string {
	g, err := n.gm.Group(groupID)
	if err != nil {
		return nil
	}
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.AgentID)
	}
	sort.Strings(ids)
	return ids
}

// formGroup has owner create a group, invite each member (with the given
// roles/weights, default member/1), and waits until every member joined
// and every copy lists them all.
func formGroup(t testing.TB, owner *node, members []*node, invites ...group.InviteRequest) *group.Group {
	t.Helper()
	ctx := context.Background()
	g, err := owner.gm.Create(ctx, group.CreateRequest{Name: "test group"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for i, m := range members {
		req := group.InviteRequest{AgentID: m.id()}
		if i < len(invites) {
			req = invites[i]
			req.AgentID = m.id()
		}
		if _, created, err := owner.gm.Invite(ctx, g.GroupID, req); err != nil || !created {
			t.Fatalf("Invite %s: created %v, %v", m.name, created, err)
		}
	}
	for _, m := range members {
		testutil.Eventually(t, pollTimeout, m.name+"'s invitation", func() bool { return standing(m, g.GroupID) == group.StandingInvited })
		if _, err := m.gm.Join(ctx, g.GroupID, ""); err != nil {
			t.Fatalf("%s Join: %v", m.name, err)
		}
	}
	all := []string{owner.id()}
	for _, m := range members {
		all = append(all, m.id())
	}
	sort.Strings(all)
	for _, n := range append([]*node{owner}, members...) {
		testutil.Eventually(t, pollTimeout, n.name+"'s copy with every member", func() bool {
			return slices.Equal(memberIDs(n, g.GroupID), all) && standing(n, g.GroupID) == group.StandingMember
		})
	}
	g, err = owner.gm.Group(g.GroupID)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
