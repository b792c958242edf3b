package group_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// star starts an owner and n members, each member paired with the owner
// (not with each other: the owner relays).
func star(t *testing.T, clock agent.Clock, n int, handlers ...agent.Handler) (*node, []*node) {
	t.Helper()
	owner := startNode(t, "owner", clock, handlers...)
	var members []*node
	for i := range n {
		m := startNode(t, "member"+string(rune('1'+i)), clock, handlers...)
		pair(t, owner, m)
		members = append(members, m)
	}
	return owner, members
}

func TestMembership(t *testing.T) {
	ctx := context.Background()
	owner, ms := star(t, nil, 3)
	admin, plain, outsider := ms[0], ms[1], ms[2]
	g := formGroup(t, owner, []*node{admin, plain}, group.InviteRequest{Role: group.RoleAdmin, Weight: 2.5})

	t.Run("capabilities", func(t *testing.T) {
		if !owner.a.Capabilities().SupportGroups {
			t.Error("support_groups is false with the group manager running")
		}
		for _, name := range []string{wire.IfaceGroupManager, wire.IfaceVotingHandler, wire.IfaceGroupTaskHandler} {
			if !owner.a.ProvidesInterface(name) {
				t.Errorf("%s is not provided", name)
			}
		}
	})

	t.Run("roles and weights", func(t *testing.T) {
		got := map[string]group.Role{}
		for _, m := range g.Members {
			got[m.AgentID] = m.Role
			if m.AgentID == admin.id() && m.Weight != 2.5 {
				t.Errorf("admin weight = %v, want 2.5", m.Weight)
			}
			if m.JoinedAt.IsZero() {
				t.Errorf("member %s has no joined_at", m.AgentID)
			}
		}
		want := map[string]group.Role{owner.id(): group.RoleOwner, admin.id(): group.RoleAdmin, plain.id(): group.RoleMember}
		for id, role := range want {
			if got[id] != role {
				t.Errorf("role of %s = %q, want %q", id, got[id], role)
			}
		}
		if copyOf, err := plain.gm.Group(g.GroupID); err != nil || copyOf.Version != g.Version || copyOf.Owner != owner.id() {
			t.Errorf("member's copy = %+v, %v; want version %d owned by %s", copyOf, err, g.Version, owner.id())
		}
	})

	t.Run("a plain member may not invite or disband", func(t *testing.T) {
		_, _, err := plain.gm.Invite(ctx, g.GroupID, group.InviteRequest{AgentID: outsider.id()})
		wantCode(t, err, wire.CodePermissionDenied)
		_, _, err = plain.gm.Disband(ctx, g.GroupID)
		wantCode(t, err, wire.CodePermissionDenied)
		_, _, err = plain.gm.Leave(ctx, g.GroupID, admin.id())
		wantCode(t, err, wire.CodePermissionDenied)
	})

	t.Run("join without an invitation", func(t *testing.T) {
		_, err := outsider.gm.Join(ctx, g.GroupID, "")
		wantCode(t, err, wire.CodeNotFound)
		// A forged join sent straight to the owner is refused there.
		if err := outsider.Network.SendToPeer(ctx, owner.id(), wire.MsgGroupJoin, map[string]any{"group_id": g.GroupID}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, pollTimeout, "the forged join refused as a dead letter", func() bool {
			items, _, err := outsider.Network.Outbox().List(peer.OutboxQuery{State: "dead", Peer: owner.id(), Limit: 10})
			return err == nil && len(items) == 1 && items[0].Type == string(wire.MsgGroupJoin)
		})
		if got := memberIDs(owner, g.GroupID); slices.Contains(got, outsider.id()) {
			t.Errorf("members %v include the uninvited agent", got)
		}
	})

	t.Run("an admin's invitation goes through the owner", func(t *testing.T) {
		pair(t, admin, outsider) // not needed by the protocol: the owner sends the invitation
		got, created, err := admin.gm.Invite(ctx, g.GroupID, group.InviteRequest{AgentID: outsider.id()})
		if err != nil || created || got == nil {
			t.Fatalf("Invite from the admin: created %v, %v; want sent to the owner", created, err)
		}
		testutil.Eventually(t, pollTimeout, "the outsider's invitation", func() bool { return standing(outsider, g.GroupID) == group.StandingInvited })
		o, _ := outsider.gm.Group(g.GroupID)
		if o.Owner != owner.id() || o.Name != g.Name {
			t.Errorf("invitation = %+v", o)
		}
		if _, err := outsider.gm.Join(ctx, g.GroupID, ""); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, pollTimeout, "four members on every copy", func() bool {
			for _, n := range []*node{owner, admin, plain, outsider} {
				if len(memberIDs(n, g.GroupID)) != 4 {
					return false
				}
			}
			return true
		})
	})

	t.Run("leave and removal", func(t *testing.T) {
		if _, _, err := owner.gm.Leave(ctx, g.GroupID, ""); err == nil {
			t.Fatal("the owner left its own group")
		} else {
			wantCode(t, err, wire.CodeInvalidStateChange)
		}
		if _, done, err := plain.gm.Leave(ctx, g.GroupID, ""); err != nil || !done {
			t.Fatalf("Leave: done %v, %v", done, err)
		}
		if s := standing(plain, g.GroupID); s != group.StandingFormer {
			t.Errorf("standing after leaving = %s", s)
		}
		// The admin removes the outsider; the owner does it and tells it.
		if _, done, err := admin.gm.Leave(ctx, g.GroupID, outsider.id()); err != nil || done {
			t.Fatalf("removal by the admin: done %v, %v; want sent to the owner", done, err)
		}
		want := []string{owner.id(), admin.id()}
		slices.Sort(want)
		testutil.Eventually(t, pollTimeout, "two members left on the owner and the admin", func() bool {
			return slices.Equal(memberIDs(owner, g.GroupID), want) && slices.Equal(memberIDs(admin, g.GroupID), want)
		})
		testutil.Eventually(t, pollTimeout, "the removed agent told", func() bool { return standing(outsider, g.GroupID) == group.StandingFormer })
	})

	t.Run("an admin disbands through the owner", func(t *testing.T) {
		if _, done, err := admin.gm.Disband(ctx, g.GroupID); err != nil || done {
			t.Fatalf("Disband by the admin: done %v, %v", done, err)
		}
		testutil.Eventually(t, pollTimeout, "disbanded everywhere", func() bool {
			a, _ := admin.gm.Group(g.GroupID)
			o, _ := owner.gm.Group(g.GroupID)
			return a != nil && o != nil && a.Status == group.StatusDisbanded && o.Status == group.StatusDisbanded
		})
		_, err := owner.gm.Send(ctx, g.GroupID, group.MessageRequest{Text: "anyone?"})
		wantCode(t, err, wire.CodeInvalidStateChange)
	})

	t.Run("events", func(t *testing.T) {
		evs, err := owner.gm.Events(g.GroupID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var types []wire.MessageType
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Errorf("event %d has seq %d", i, ev.Seq)
			}
			types = append(types, ev.Type)
		}
		want := []wire.MessageType{group.EventCreate, wire.MsgGroupInvite, wire.MsgGroupInvite, wire.MsgGroupJoin, wire.MsgGroupJoin,
			wire.MsgGroupInvite, wire.MsgGroupJoin, wire.MsgGroupLeave, wire.MsgGroupLeave, wire.MsgGroupDisband}
		if !slices.Equal(types, want) {
			t.Errorf("owner's events = %v, want %v", types, want)
		}
	})
}

func TestBroadcast(t *testing.T) {
	ctx := context.Background()
	owner, ms := star(t, nil, 3)
	g := formGroup(t, owner, ms)
	sub := ms[2].gm.Subscribe(g.GroupID)
	defer sub.Close()

	ms[1].stop() // offline during the broadcast
	msg, err := ms[0].gm.Send(ctx, g.GroupID, group.MessageRequest{Text: "hello", Body: wire.JSONValue(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	received := func(n *node) bool {
		evs, err := n.gm.Events(g.GroupID, 0, 1000)
		if err != nil {
			return false
		}
		for _, ev := range evs {
			if ev.Type == wire.MsgGroupMessage && ev.EventID == msg.MessageID {
				var got group.Message
				return json.Unmarshal(ev.Payload, &got) == nil && got.Text == "hello" && got.From == ms[0].id() &&
					string(got.Body) == `{"n":1}`
			}
		}
		return false
	}
	for _, n := range []*node{owner, ms[0], ms[2]} {
		testutil.Eventually(t, pollTimeout, n.name+" receiving the message", func() bool { return received(n) })
	}
	t.Run("subscriber", func(t *testing.T) {
		for ev := range sub.C {
			if ev.EventID == msg.MessageID {
				return
			}
		}
		t.Error("the subscription ended without the message")
	})
	t.Run("offline member receives it on return", func(t *testing.T) {
		ms[1].open()
		testutil.Eventually(t, pollTimeout, "the returning member receiving the message", func() bool { return received(ms[1]) })
	})
	t.Run("once per agent", func(t *testing.T) {
		for _, n := range append([]*node{owner}, ms...) {
			evs, _ := n.gm.Events(g.GroupID, 0, 1000)
			count := 0
			for _, ev := range evs {
				if ev.EventID == msg.MessageID {
					count++
				}
			}
			if count != 1 {
				t.Errorf("%s recorded the message %d times", n.name, count)
			}
		}
	})
}
