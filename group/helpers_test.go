package group_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/clocktest"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// pollTimeout bounds every wait for a state; generous for -race.
const pollTimeout = 20 * time.Second

// fakeClock is the test clock: time moves only on Advance.
type fakeClock = clocktest.Clock

func newFakeClock() *fakeClock {
	return clocktest.New(time.Now().UTC().Truncate(time.Millisecond))
}

// node is a peer node (peernode) with its group manager: an agent served
// over HTTP on a loopback address that stays the same across restarts
// (peers pin the endpoint). a and gm are the node's Agent and Groups under
// the short names the tests use, set again at each open.
type node struct {
	*peernode.Node
	name string
	a    *agent.Agent
	gm   *group.Manager
}

// startNode opens an agent named name with the given clock (nil: the wall
// clock) and extra handlers, and serves it; it is stopped when the test
// ends.
func startNode(t testing.TB, name string, clock agent.Clock, handlers ...agent.Handler) *node {
	t.Helper()
	fast := peer.DefaultConfig()
	fast.MaxRetries, fast.RetryBaseDelayMS, fast.HeartbeatIntervalSeconds = 3, 50, 1
	opts := peernode.Options{Name: name, AdminToken: "group-admin", Groups: true, Handlers: handlers,
		Peer: peer.Options{Config: &fast}}
	if clock != nil {
		opts.Agent = agent.Options{Clock: clock}
	}
	n := &node{Node: peernode.Start(t, opts), name: name}
	n.a, n.gm = n.Agent, n.Groups
	return n
}

// open opens a stopped node again on its data directory and address.
func (n *node) open() {
	n.Open()
	n.a, n.gm = n.Agent, n.Groups
}

// stop shuts the server, the manager and the agent down; safe twice.
func (n *node) stop() { n.Stop() }

func (n *node) restart() {
	n.stop()
	n.open()
}

func (n *node) id() string  { return n.ID() }
func (n *node) url() string { return n.URL() }

// pair makes a and b peers of each other.
func pair(t testing.TB, a, b *node) {
	t.Helper()
	peernode.Pair(t, a.Node, b.Node)
}

// wantCode fails unless err is a *wire.Error with code.
func wantCode(t testing.TB, err error, code wire.ErrorCode) {
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
