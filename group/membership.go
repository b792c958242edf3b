package group

import (
	"context"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Create makes a group owned by this agent and invites its initial
// members (which must be paired peers).
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*Group, error) {
	if req.Name == "" || len(req.Name) > maxNameLen {
		return nil, invalid("name", "name must be 1 to %d bytes", maxNameLen)
	}
	if len(req.Description) > maxTextLen {
		return nil, invalid("description", "description must be at most %d bytes", maxTextLen)
	}
	if len(req.InitialMembers) >= MaxMembers {
		return nil, invalid("initial_members", "a group has at most %d members", MaxMembers)
	}
	for i, id := range req.InitialMembers {
		if err := m.checkInvitee(id); err != nil {
			return nil, err
		}
		if contains(req.InitialMembers[:i], id) {
			return nil, invalid("initial_members", "%s is listed twice", id)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("group id: %w", err)
	}
	now := wire.Time{Time: m.now()}
	g := &Group{
		GroupID: id.String(), Name: req.Name, Description: req.Description, Owner: m.me,
		Status: StatusActive, CreatedAt: now, UpdatedAt: now, Version: 1, Standing: StandingMember,
		Members: []Member{{AgentID: m.me, Role: RoleOwner, Weight: defaultWeight, JoinedAt: now, TaskTypes: m.taskTypes()}},
	}
	err = m.update(ctx, func(tx *store.Tx) error {
		c := g.clone()
		if err := m.record(tx, c.GroupID, "create", EventCreate, m.me, c.snapshot()); err != nil {
			return err
		}
		for _, inv := range req.InitialMembers {
			if err := m.inviteAt(tx, c, InviteRequest{AgentID: inv, Role: RoleMember, Weight: defaultWeight}, m.me); err != nil {
				return err
			}
		}
		if err := putGroup(tx, c); err != nil {
			return err
		}
		g = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.log.Info("group created", "group_id", g.GroupID, "name", g.Name, "invited", len(req.InitialMembers))
	return g, nil
}

// taskTypes lists this agent's task types, declared when it joins.
func (m *Manager) taskTypes() []string {
	var out []string
	for _, t := range m.a.Capabilities().SupportedTaskTypes {
		out = append(out, t.Type)
	}
	return out
}

// checkInvitee accepts a paired peer other than this agent.
func (m *Manager) checkInvitee(id string) error {
	if err := checkID("agent_id", id); err != nil {
		return err
	}
	if id == m.me {
		return invalid("agent_id", "this agent is the group's owner already")
	}
	if _, err := m.net.Pairing().Peer(id); err != nil {
		return invalid("agent_id", "%s is not a paired peer of this agent (POST /agents to pair it first)", id)
	}
	return nil
}

// loadActive reads a group that is not disbanded.
func loadActive(tx *store.Tx, id string) (*Group, error) {
	g, err := getGroup(tx, id)
	if err != nil {
		return nil, err
	}
	if g.Status == StatusDisbanded {
		return nil, conflict("group_disbanded", "group %s is disbanded", id)
	}
	return g, nil
}

// Invite invites a paired agent into a group; only the owner or an admin
// may. On the owner's agent the invitation is made (created is true);
// on an admin's agent it is sent to the owner's agent, which makes it.
func (m *Manager) Invite(ctx context.Context, groupID string, req InviteRequest) (g *Group, created bool, err error) {
	if err := checkID("agent_id", req.AgentID); err != nil {
		return nil, false, err
	}
	if req.Role, err = checkRole(req.Role); err != nil {
		return nil, false, err
	}
	if req.Weight, err = checkWeight(req.Weight); err != nil {
		return nil, false, err
	}
	err = m.update(ctx, func(tx *store.Tx) error {
		c, err := loadActive(tx, groupID)
		if err != nil {
			return err
		}
		if c.Standing != StandingMember || !c.canManage(m.me) {
			return denied("only the owner or an admin of group %s may invite", groupID)
		}
		if c.Owner != m.me {
			created = false
			g = c
			return m.send(tx, c.Owner, wire.MsgGroupInvite, &memberPayload{GroupID: groupID, AgentID: req.AgentID, Role: req.Role, Weight: req.Weight, By: m.me})
		}
		if err := m.checkInvitee(req.AgentID); err != nil {
			return err
		}
		if err := m.inviteAt(tx, c, req, m.me); err != nil {
			return err
		}
		created = true
		g = c
		return putGroup(tx, c)
	})
	if err != nil {
		return nil, false, err
	}
	return g, created, nil
}

// inviteAt records an invitation in the owner's record g (the caller
// stores g) and sends it to the invitee.
func (m *Manager) inviteAt(tx *store.Tx, g *Group, req InviteRequest, by string) error {
	if g.member(req.AgentID) != nil {
		return conflict("already_member", "%s is already a member of group %s", req.AgentID, g.GroupID)
	}
	if len(g.Members)+len(g.Invitations) >= MaxMembers && g.invitation(req.AgentID) == nil {
		return conflict("group_full", "group %s has %d members and invitations, the most it may have", g.GroupID, MaxMembers)
	}
	now := wire.Time{Time: m.now()}
	inv := Invitation{AgentID: req.AgentID, Role: req.Role, Weight: req.Weight, InvitedBy: by, InvitedAt: now}
	if old := g.invitation(req.AgentID); old != nil {
		*old = inv
	} else {
		g.Invitations = append(g.Invitations, inv)
	}
	g.UpdatedAt = now
	p := &memberPayload{GroupID: g.GroupID, AgentID: req.AgentID, Role: req.Role, Weight: req.Weight, By: by, Group: g.snapshot()}
	evID := "invite:" + req.AgentID + ":" + strconv.FormatInt(now.UnixNano(), 10)
	if err := m.record(tx, g.GroupID, evID, wire.MsgGroupInvite, by, &memberPayload{AgentID: req.AgentID, Role: req.Role, Weight: req.Weight, By: by}); err != nil {
		return err
	}
	return m.send(tx, req.AgentID, wire.MsgGroupInvite, p)
}

// Join accepts this agent's invitation: the join goes to the owner's
// agent, which adds the member and announces it (the group's standing is
// joining until then). Joining a group this agent is a member of changes
// nothing.
func (m *Manager) Join(ctx context.Context, groupID, agentID string) (*Group, error) {
	if agentID != "" && agentID != m.me {
		return nil, denied("an agent joins for itself: agent_id must be this agent (%s)", m.me)
	}
	var g *Group
	err := m.update(ctx, func(tx *store.Tx) error {
		c, err := loadActive(tx, groupID)
		if err != nil {
			return err
		}
		switch c.Standing {
		case StandingMember:
			g = c
			return nil
		case StandingInvited, StandingJoining:
		default:
			return denied("this agent is not invited to group %s", groupID)
		}
		c.Standing = StandingJoining
		c.UpdatedAt = wire.Time{Time: m.now()}
		if err := m.send(tx, c.Owner, wire.MsgGroupJoin, &memberPayload{GroupID: groupID, AgentID: m.me, TaskTypes: m.taskTypes()}); err != nil {
			return err
		}
		g = c
		return putGroup(tx, c)
	})
	return g, err
}

// Leave makes this agent leave a group (or decline its invitation); with
// agentID naming another member, the owner or an admin removes that
// member. removed is true when the change was made here (this agent's own
// leave, or a removal on the owner's agent) rather than sent to the owner.
func (m *Manager) Leave(ctx context.Context, groupID, agentID string) (g *Group, done bool, err error) {
	if agentID == "" {
		agentID = m.me
	}
	if err := checkID("agent_id", agentID); err != nil {
		return nil, false, err
	}
	err = m.update(ctx, func(tx *store.Tx) error {
		c, err := getGroup(tx, groupID)
		if err != nil {
			return err
		}
		g, done = c, true
		if agentID == m.me {
			return m.leaveSelf(tx, c)
		}
		if c.Status == StatusDisbanded {
			return conflict("group_disbanded", "group %s is disbanded", groupID)
		}
		if c.Standing != StandingMember || !c.canManage(m.me) {
			return denied("only the owner or an admin of group %s may remove members", groupID)
		}
		if c.Owner != m.me {
			done = false
			return m.send(tx, c.Owner, wire.MsgGroupLeave, &memberPayload{GroupID: groupID, AgentID: agentID, By: m.me})
		}
		if err := m.removeAt(tx, c, agentID, m.me); err != nil {
			return err
		}
		return putGroup(tx, c)
	})
	if err != nil {
		return nil, false, err
	}
	return g, done, nil
}

// leaveSelf records this agent's leave and tells the owner.
func (m *Manager) leaveSelf(tx *store.Tx, g *Group) error {
	if g.Owner == m.me {
		return conflict("owner_cannot_leave", "the owner cannot leave group %s; disband it instead", g.GroupID)
	}
	if g.Standing == StandingFormer {
		return nil
	}
	g.Standing = StandingFormer
	now := wire.Time{Time: m.now()}
	g.UpdatedAt = now
	if g.Status != StatusDisbanded {
		if err := m.send(tx, g.Owner, wire.MsgGroupLeave, &memberPayload{GroupID: g.GroupID, AgentID: m.me}); err != nil {
			return err
		}
	}
	evID := "leave:" + m.me + ":" + strconv.FormatInt(now.UnixNano(), 10)
	if err := m.record(tx, g.GroupID, evID, wire.MsgGroupLeave, m.me, &memberPayload{AgentID: m.me}); err != nil {
		return err
	}
	return putGroup(tx, g)
}

// removeAt removes a member (or withdraws an invitation) in the owner's
// record g (the caller stores g) and announces it.
func (m *Manager) removeAt(tx *store.Tx, g *Group, agentID, by string) error {
	if agentID == g.Owner {
		return conflict("owner_cannot_leave", "the owner cannot leave group %s; disband it instead", g.GroupID)
	}
	now := wire.Time{Time: m.now()}
	if g.member(agentID) == nil {
		if g.invitation(agentID) != nil {
			g.Invitations = removeInvitation(g.Invitations, agentID)
			g.UpdatedAt = now
		}
		return nil
	}
	kept := g.Members[:0:0]
	for _, mb := range g.Members {
		if mb.AgentID != agentID {
			kept = append(kept, mb)
		}
	}
	g.Members = kept
	g.Version++
	g.UpdatedAt = now
	p := &memberPayload{GroupID: g.GroupID, AgentID: agentID, By: by, Group: g.snapshot()}
	if err := m.record(tx, g.GroupID, "leave:"+agentID+":"+strconv.FormatUint(g.Version, 10), wire.MsgGroupLeave, agentID,
		&memberPayload{AgentID: agentID, By: by}); err != nil {
		return err
	}
	if err := m.announce(tx, g, wire.MsgGroupLeave, p); err != nil {
		return err
	}
	if agentID != m.me {
		return m.send(tx, agentID, wire.MsgGroupLeave, p) // it learns it was removed
	}
	return nil
}

func removeInvitation(list []Invitation, id string) []Invitation {
	out := list[:0:0]
	for _, inv := range list {
		if inv.AgentID != id {
			out = append(out, inv)
		}
	}
	return out
}

// Disband ends a group; only the owner or an admin may. On the owner's
// agent it is done at once (done is true); an admin's agent sends it to the
// owner's agent.
func (m *Manager) Disband(ctx context.Context, groupID string) (g *Group, done bool, err error) {
	var stop []string
	err = m.update(ctx, func(tx *store.Tx) error {
		stop = nil
		c, err := getGroup(tx, groupID)
		if err != nil {
			return err
		}
		g, done = c, true
		if c.Status == StatusDisbanded {
			return nil
		}
		if c.Standing != StandingMember || !c.canManage(m.me) {
			return denied("only the owner or an admin of group %s may disband it", groupID)
		}
		if c.Owner != m.me {
			done = false
			return m.send(tx, c.Owner, wire.MsgGroupDisband, &memberPayload{GroupID: groupID, By: m.me})
		}
		stop, err = m.disbandAt(tx, c, m.me)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	m.stopTimers(stop)
	return g, done, nil
}

// disbandAt disbands the owner's record g, closes its open votes as
// cancelled, stores g and announces it. It returns the vote timers to stop
// once committed.
func (m *Manager) disbandAt(tx *store.Tx, g *Group, by string) ([]string, error) {
	now := wire.Time{Time: m.now()}
	g.Status, g.Version, g.UpdatedAt, g.Invitations = StatusDisbanded, g.Version+1, now, nil
	stop, err := m.cancelVotes(tx, g.GroupID)
	if err != nil {
		return nil, err
	}
	if err := m.record(tx, g.GroupID, "disband", wire.MsgGroupDisband, by, &memberPayload{By: by}); err != nil {
		return nil, err
	}
	if err := m.announce(tx, g, wire.MsgGroupDisband, &memberPayload{GroupID: g.GroupID, By: by, Group: g.snapshot()}); err != nil {
		return nil, err
	}
	return stop, putGroup(tx, g)
}

// ---- inbound membership messages ----

// memberMessage handles group:invite, group:join, group:leave and
// group:disband: requests on the owner's agent, announcements elsewhere.
func (m *Manager) memberMessage(ctx context.Context, from string, msgType wire.MessageType, p *memberPayload) error {
	if err := checkID("group_id", p.GroupID); err != nil {
		return err
	}
	if m.ownerOf(p.GroupID) == m.me {
		return m.memberRequest(ctx, from, msgType, p)
	}
	if p.Group == nil || p.Group.GroupID != p.GroupID {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "%s announcement without the group's record", msgType)
	}
	if err := fromOwner(p.Group, from, msgType); err != nil {
		return err
	}
	var stop []string
	err := m.update(ctx, func(tx *store.Tx) error {
		stop = nil
		old, err := getGroup(tx, p.GroupID)
		switch {
		case err != nil && !isNotFound(err):
			return err
		case err != nil && msgType != wire.MsgGroupInvite:
			// Not invited, or forgotten: nothing to update.
			m.log.Debug("announcement for an unknown group", "group_id", p.GroupID, "type", msgType, "from", from)
			return nil
		}
		if old != nil {
			if err := fromOwner(old, from, msgType); err != nil {
				return err
			}
			if old.Version > p.Group.Version {
				return nil // stale
			}
		}
		g := p.Group.snapshot()
		g.Standing = standingAfter(old, g, m.me, msgType == wire.MsgGroupInvite && p.AgentID == m.me)
		g.UpdatedAt = wire.Time{Time: m.now()}
		if msgType == wire.MsgGroupDisband {
			if stop, err = m.cancelVotes(tx, g.GroupID); err != nil {
				return err
			}
		}
		evID, evFrom := string(msgType)+":"+p.AgentID+":"+strconv.FormatUint(g.Version, 10), p.AgentID
		if msgType == wire.MsgGroupDisband {
			evID, evFrom = "disband", p.By
		}
		if msgType == wire.MsgGroupInvite {
			evFrom = p.By
		}
		if err := m.record(tx, g.GroupID, evID, msgType, evFrom, &memberPayload{AgentID: p.AgentID, Role: p.Role, Weight: p.Weight, By: p.By}); err != nil {
			return err
		}
		return putGroup(tx, g)
	})
	m.stopTimers(stop)
	return err
}

// standingAfter is this agent's standing once announcement g replaces old.
func standingAfter(old, g *Group, me string, invited bool) string {
	if g.member(me) != nil {
		return StandingMember
	}
	switch {
	case invited:
		return StandingInvited
	case old == nil:
		return StandingFormer
	case old.Standing == StandingMember:
		return StandingFormer // removed
	}
	return old.Standing
}

// memberRequest applies a member's request on the owner's agent.
func (m *Manager) memberRequest(ctx context.Context, from string, msgType wire.MessageType, p *memberPayload) error {
	var stop []string
	err := m.update(ctx, func(tx *store.Tx) error {
		stop = nil
		g, err := getGroup(tx, p.GroupID)
		if err != nil {
			return err
		}
		if g.Status == StatusDisbanded {
			if msgType == wire.MsgGroupLeave || msgType == wire.MsgGroupDisband {
				return nil // nothing left to do
			}
			return conflict("group_disbanded", "group %s is disbanded", g.GroupID)
		}
		switch msgType {
		case wire.MsgGroupInvite:
			if !g.canManage(from) {
				return denied("only the owner or an admin of group %s may invite; %s is neither", g.GroupID, from)
			}
			role, err := checkRole(p.Role)
			if err != nil {
				return err
			}
			w, err := checkWeight(p.Weight)
			if err != nil {
				return err
			}
			if err := m.checkInvitee(p.AgentID); err != nil {
				return err
			}
			if err := m.inviteAt(tx, g, InviteRequest{AgentID: p.AgentID, Role: role, Weight: w}, from); err != nil {
				return err
			}
		case wire.MsgGroupJoin:
			if g.member(from) != nil {
				// Already in: tell it again, in case it asks once more.
				return m.send(tx, from, wire.MsgGroupJoin, &memberPayload{GroupID: g.GroupID, AgentID: from, Group: g.snapshot()})
			}
			if err := m.joinAt(tx, g, from, p.TaskTypes); err != nil {
				return err
			}
		case wire.MsgGroupLeave:
			target := p.AgentID
			if target == "" {
				target = from
			}
			if target != from && !g.canManage(from) {
				return denied("only the owner or an admin of group %s may remove members; %s is neither", g.GroupID, from)
			}
			if err := m.removeAt(tx, g, target, from); err != nil {
				return err
			}
		case wire.MsgGroupDisband:
			if !g.canManage(from) {
				return denied("only the owner or an admin of group %s may disband it; %s is neither", g.GroupID, from)
			}
			stop, err = m.disbandAt(tx, g, from)
			return err
		}
		return putGroup(tx, g)
	})
	m.stopTimers(stop)
	return err
}

// joinAt adds an invited agent to the owner's record g and announces it.
func (m *Manager) joinAt(tx *store.Tx, g *Group, agentID string, taskTypes []string) error {
	inv := g.invitation(agentID)
	if inv == nil {
		return denied("%s is not invited to group %s", agentID, g.GroupID)
	}
	if len(taskTypes) > 1024 {
		taskTypes = taskTypes[:1024]
	}
	now := wire.Time{Time: m.now()}
	g.Members = append(g.Members, Member{AgentID: agentID, Role: inv.Role, Weight: inv.Weight, JoinedAt: now, TaskTypes: taskTypes})
	g.Invitations = removeInvitation(g.Invitations, agentID)
	g.Version++
	g.UpdatedAt = now
	if err := m.record(tx, g.GroupID, "join:"+agentID+":"+strconv.FormatUint(g.Version, 10), wire.MsgGroupJoin, agentID,
		&memberPayload{AgentID: agentID, Role: inv.Role, Weight: inv.Weight}); err != nil {
		return err
	}
	m.log.Info("member joined", "group_id", g.GroupID, "agent_id", agentID, "members", len(g.Members))
	return m.announce(tx, g, wire.MsgGroupJoin, &memberPayload{GroupID: g.GroupID, AgentID: agentID, Role: inv.Role, Weight: inv.Weight, Group: g.snapshot()})
}
