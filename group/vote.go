package group

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/group/groupdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Vote limits.
const (
	// DefaultVoteDeadline is the time a vote stays open when the proposal
	// names none.
	DefaultVoteDeadline = time.Hour
	maxVoteDeadline     = 30 * 24 * time.Hour
	maxOptionLen        = 128
)

// VoteRequest is the body of POST /group/{id}/vote.
type VoteRequest struct {
	Title       string   `json:"title" msgpack:"title"`
	Description string   `json:"description,omitempty" msgpack:"description,omitempty"`
	Options     []string `json:"options" msgpack:"options"`
	// Consensus is majority (default), supermajority, unanimous, weighted
	// or ranked.
	Consensus string `json:"consensus,omitempty" msgpack:"consensus,omitempty"`
	// Quorum is the number of ballots needed (0: none).
	Quorum int `json:"quorum,omitempty" msgpack:"quorum,omitempty"`
	// DeadlineSeconds is how long the vote stays open; default 3600.
	DeadlineSeconds int `json:"deadline_seconds,omitempty" msgpack:"deadline_seconds,omitempty"`
}

// checkVote validates a proposal and fills in its defaults.
func checkVote(v *Vote) error {
	if v.Title == "" || len(v.Title) > maxNameLen {
		return invalid("title", "title must be 1 to %d bytes", maxNameLen)
	}
	if len(v.Description) > maxTextLen {
		return invalid("description", "description must be at most %d bytes", maxTextLen)
	}
	if len(v.Options) < 2 || len(v.Options) > MaxOptions {
		return invalid("options", "a vote has 2 to %d options", MaxOptions)
	}
	for i, o := range v.Options {
		if o == "" || len(o) > maxOptionLen {
			return invalid("options", "each option is 1 to %d bytes", maxOptionLen)
		}
		if slices.Contains(v.Options[:i], o) {
			return invalid("options", "option %q is listed twice", o)
		}
	}
	var err error
	if v.Consensus, err = checkConsensus(v.Consensus); err != nil {
		return err
	}
	if v.Quorum < 0 || v.Quorum > MaxMembers {
		return invalid("quorum", "quorum must be 0 to %d ballots", MaxMembers)
	}
	switch d := time.Duration(v.DeadlineSeconds) * time.Second; {
	case v.DeadlineSeconds == 0:
		v.DeadlineSeconds = int(DefaultVoteDeadline / time.Second)
	case d < time.Second || d > maxVoteDeadline:
		return invalid("deadline_seconds", "deadline_seconds must be 1 to %d", int(maxVoteDeadline/time.Second))
	}
	return nil
}

func getVote(tx *store.Tx, groupID, voteID string) (*Vote, error) {
	return getDoc[Vote]("vote", voteID, func() ([]byte, error) { return groupdb.Vote(tx, groupID, voteID) })
}

func putVote(tx *store.Tx, v *Vote) error {
	return putDoc("vote", v.VoteID, v, func(doc []byte) error { return groupdb.PutVote(tx, v.GroupID, v.VoteID, doc) })
}

// OpenVote puts a proposal to a group; any member may. On the owner's
// agent the vote opens at once (opened is true); elsewhere it is sent to
// the owner's agent and kept here as proposed until it is announced.
func (m *Manager) OpenVote(ctx context.Context, groupID string, req VoteRequest) (v *Vote, opened bool, err error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, false, fmt.Errorf("vote id: %w", err)
	}
	prop := &Vote{VoteID: id.String(), GroupID: groupID, Title: req.Title, Description: req.Description,
		Options: slices.Clone(req.Options), Consensus: req.Consensus, Quorum: req.Quorum,
		DeadlineSeconds: req.DeadlineSeconds, Proposer: m.me, Status: VoteProposed}
	if err := checkVote(prop); err != nil {
		return nil, false, err
	}
	var arm *Vote
	err = m.update(ctx, func(tx *store.Tx) error {
		arm = nil
		g, err := loadActive(tx, groupID)
		if err != nil {
			return err
		}
		if g.Standing != StandingMember {
			return denied("only members of group %s may propose a vote", groupID)
		}
		if prop.Quorum > len(g.Members) {
			return invalid("quorum", "quorum %d is more than the %d members", prop.Quorum, len(g.Members))
		}
		c := *prop
		if g.Owner != m.me {
			v, opened = &c, false
			if err := putVote(tx, &c); err != nil {
				return err
			}
			return m.send(tx, g.Owner, wire.MsgGroupVoteOpen, &votePayload{Vote: &c})
		}
		if err := m.openAt(tx, g, &c); err != nil {
			return err
		}
		v, opened, arm = &c, true, &c
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if arm != nil {
		m.arm(arm)
	}
	return v, opened, nil
}

// openAt opens a proposal on the owner's agent: the voters are the
// members now; it is stored, recorded and announced. The caller arms its
// deadline once committed.
func (m *Manager) openAt(tx *store.Tx, g *Group, v *Vote) error {
	now := m.now()
	v.Status = VoteOpen
	v.OpenedAt = wire.Time{Time: now}
	v.Deadline = wire.Time{Time: now.Add(time.Duration(v.DeadlineSeconds) * time.Second)}
	v.Voters = nil
	for _, mb := range g.Members {
		v.Voters = append(v.Voters, Voter{AgentID: mb.AgentID, Weight: mb.Weight})
	}
	v.Ballots, v.Result = nil, nil
	if err := putVote(tx, v); err != nil {
		return err
	}
	if err := m.record(tx, g.GroupID, "vote_open:"+v.VoteID, wire.MsgGroupVoteOpen, v.Proposer, v); err != nil {
		return err
	}
	m.log.Info("vote opened", "group_id", g.GroupID, "vote_id", v.VoteID, "consensus", v.Consensus, "deadline", v.Deadline.Time)
	return m.announce(tx, g, wire.MsgGroupVoteOpen, &votePayload{Vote: v})
}

// Cast records this agent's ballot. On the owner's agent it is counted at
// once (counted is true) and the vote closes when every voter has cast
// one; elsewhere it is checked against the copy of the vote, kept, and
// sent to the owner's agent. A ballot after the close is refused (409),
// as is one from an agent that is not a voter (403).
func (m *Manager) Cast(ctx context.Context, groupID, voteID string, b BallotRequest) (v *Vote, counted bool, err error) {
	var closed *Vote
	err = m.update(ctx, func(tx *store.Tx) error {
		closed = nil
		g, err := getGroup(tx, groupID)
		if err != nil {
			return err
		}
		if g.Owner == m.me {
			v, closed, err = m.castAt(tx, g, m.me, voteID, b)
			counted = true
			return err
		}
		c, err := getVote(tx, groupID, voteID)
		if err != nil {
			return err
		}
		if err := m.checkCast(g, c, m.me, b); err != nil {
			return err
		}
		setBallot(c, Ballot{Voter: m.me, Option: b.Option, Ranking: b.Ranking, CastAt: wire.Time{Time: m.now()}}, normalBallot(c, b))
		if err := putVote(tx, c); err != nil {
			return err
		}
		v, counted = c, false
		return m.send(tx, g.Owner, wire.MsgGroupBallot, &ballotPayload{GroupID: groupID, VoteID: voteID, BallotRequest: normalBallot(c, b)})
	})
	if err != nil {
		return nil, false, err
	}
	if closed != nil {
		m.disarm(closed)
	}
	return v, counted, nil
}

// checkCast refuses a ballot on a vote that is not open, from an agent
// that is not a voter, or that is not valid.
func (m *Manager) checkCast(g *Group, v *Vote, voter string, b BallotRequest) error {
	switch {
	case g.Status == StatusDisbanded || v.Status == VoteClosed:
		return conflict("vote_closed", "vote %s is closed", v.VoteID)
	case v.Status != VoteOpen:
		return conflict("vote_not_open", "vote %s is not open yet", v.VoteID)
	case !m.now().Before(v.Deadline.Time):
		return conflict("vote_closed", "vote %s closed at %s", v.VoteID, wire.FormatTime(v.Deadline.Time))
	}
	if !slices.ContainsFunc(v.Voters, func(x Voter) bool { return x.AgentID == voter }) {
		return denied("%s is not a voter of vote %s (the voters are the members when it opened)", voter, v.VoteID)
	}
	return checkBallot(v, b)
}

// setBallot replaces voter's ballot or adds it.
func setBallot(v *Vote, b Ballot, req BallotRequest) {
	b.Option, b.Ranking = req.Option, req.Ranking
	for i := range v.Ballots {
		if v.Ballots[i].Voter == b.Voter {
			v.Ballots[i] = b
			return
		}
	}
	v.Ballots = append(v.Ballots, b)
}

// castAt counts a ballot on the owner's agent; when it is the last voter's
// the vote closes, and closed is the vote to disarm.
func (m *Manager) castAt(tx *store.Tx, g *Group, voter, voteID string, b BallotRequest) (v, closed *Vote, err error) {
	v, err = getVote(tx, g.GroupID, voteID)
	if err != nil {
		return nil, nil, err
	}
	if err := m.checkCast(g, v, voter, b); err != nil {
		return nil, nil, err
	}
	setBallot(v, Ballot{Voter: voter, CastAt: wire.Time{Time: m.now()}}, normalBallot(v, b))
	if len(v.Ballots) < len(v.Voters) {
		return v, nil, putVote(tx, v)
	}
	if err := m.closeAt(tx, g, v); err != nil {
		return nil, nil, err
	}
	return v, v, nil
}

// castAtOwner handles a member's group:ballot on the owner's agent.
func (m *Manager) castAtOwner(ctx context.Context, from, groupID, voteID string, b BallotRequest) (*Vote, error) {
	if m.ownerOf(groupID) != m.me {
		return nil, wire.Errorf(wire.CodeInvalidParams, "this agent does not coordinate group %q", groupID)
	}
	var v, closed *Vote
	err := m.update(ctx, func(tx *store.Tx) error {
		g, err := getGroup(tx, groupID)
		if err != nil {
			return err
		}
		v, closed, err = m.castAt(tx, g, from, voteID, b)
		return err
	})
	if err != nil {
		return nil, err
	}
	if closed != nil {
		m.disarm(closed)
	}
	return v, nil
}

// closeAt tallies an open vote on the owner's agent, stores and records
// the result and announces it to every member.
func (m *Manager) closeAt(tx *store.Tx, g *Group, v *Vote) error {
	r := Count(v)
	v.Result, v.Status, v.ClosedAt = &r, VoteClosed, wire.Time{Time: m.now()}
	if err := putVote(tx, v); err != nil {
		return err
	}
	if err := m.record(tx, g.GroupID, "vote_result:"+v.VoteID, wire.MsgGroupVoteResult, m.me, v); err != nil {
		return err
	}
	m.log.Info("vote closed", "group_id", g.GroupID, "vote_id", v.VoteID, "outcome", r.Outcome, "winner", r.Winner,
		"ballots", r.Tally.Cast, "voters", r.Tally.Eligible)
	return m.announce(tx, g, wire.MsgGroupVoteResult, &votePayload{Vote: v})
}

// closeVote closes a vote at its deadline.
func (m *Manager) closeVote(groupID, voteID string) {
	err := m.update(m.bg, func(tx *store.Tx) error {
		g, err := getGroup(tx, groupID)
		if err != nil {
			return err
		}
		v, err := getVote(tx, groupID, voteID)
		if err != nil || v.Status != VoteOpen || g.Owner != m.me {
			return err
		}
		return m.closeAt(tx, g, v)
	})
	m.mu.Lock()
	delete(m.timers, groupID+"/"+voteID)
	m.mu.Unlock()
	if err != nil && !m.isClosed() {
		m.log.Error("close vote", "group_id", groupID, "vote_id", voteID, "err", err)
	}
}

// arm schedules the close of an open vote at its deadline.
func (m *Manager) arm(v *Vote) {
	key := v.GroupID + "/" + v.VoteID
	groupID, voteID := v.GroupID, v.VoteID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if t := m.timers[key]; t != nil {
		t.Stop()
	}
	m.timers[key] = m.clock.AfterFunc(v.Deadline.Sub(m.clock.Now()), func() {
		m.spawn(func() { m.closeVote(groupID, voteID) })
	})
}

// disarm stops a vote's deadline timer.
func (m *Manager) disarm(v *Vote) { m.stopTimers([]string{v.GroupID + "/" + v.VoteID}) }

func (m *Manager) stopTimers(keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if t := m.timers[k]; t != nil {
			t.Stop()
			delete(m.timers, k)
		}
	}
}

// cancelVotes closes a disbanded group's open votes as cancelled and
// returns their timer keys.
func (m *Manager) cancelVotes(tx *store.Tx, groupID string) ([]string, error) {
	var open []*Vote
	err := groupdb.Votes(tx, groupID, func(_, voteID string, doc []byte) error {
		v := new(Vote)
		if err := json.Unmarshal(doc, v); err != nil {
			return fmt.Errorf("decode vote %s: %w", voteID, err)
		}
		if v.Status != VoteClosed {
			open = append(open, v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, v := range open {
		r := Count(v)
		r.Outcome, r.Winner = OutcomeCancelled, ""
		v.Result, v.Status, v.ClosedAt = &r, VoteClosed, wire.Time{Time: m.now()}
		if err := putVote(tx, v); err != nil {
			return nil, err
		}
		keys = append(keys, v.GroupID+"/"+v.VoteID)
	}
	return keys, nil
}

// resumeVotes arms the deadlines of the open votes this agent
// coordinates (a deadline passed while it was down closes the vote now).
func (m *Manager) resumeVotes(ctx context.Context) error {
	var open []*Vote
	err := m.view(func(tx *store.Tx) error {
		owners := map[string]string{}
		return groupdb.Votes(tx, "", func(groupID, voteID string, doc []byte) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			owner, ok := owners[groupID]
			if !ok {
				if g, err := getGroup(tx, groupID); err == nil {
					owner = g.Owner
				}
				owners[groupID] = owner
			}
			if owner != m.me {
				return nil
			}
			v := new(Vote)
			if err := json.Unmarshal(doc, v); err != nil {
				return fmt.Errorf("decode vote %s: %w", voteID, err)
			}
			if v.Status == VoteOpen {
				open = append(open, v)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, v := range open {
		m.arm(v)
	}
	return nil
}

// Vote reads a vote as this agent knows it.
func (m *Manager) Vote(groupID, voteID string) (*Vote, error) {
	var v *Vote
	err := m.view(func(tx *store.Tx) error {
		if _, err := getGroup(tx, groupID); err != nil {
			return err
		}
		var err error
		v, err = getVote(tx, groupID, voteID)
		return err
	})
	return v, err
}

// Votes lists a group's votes, oldest first.
func (m *Manager) Votes(groupID string) ([]*Vote, error) {
	out := []*Vote{}
	err := m.view(func(tx *store.Tx) error {
		if _, err := getGroup(tx, groupID); err != nil {
			return err
		}
		return groupdb.Votes(tx, groupID, func(_, voteID string, doc []byte) error {
			v := new(Vote)
			if err := json.Unmarshal(doc, v); err != nil {
				return fmt.Errorf("decode vote %s: %w", voteID, err)
			}
			out = append(out, v)
			return nil
		})
	})
	return out, err
}

// voteMessage handles group:vote_open (a proposal on the owner's agent, an
// announcement elsewhere) and group:vote_result (an announcement).
func (m *Manager) voteMessage(ctx context.Context, from string, msgType wire.MessageType, v *Vote) error {
	if err := checkID("group_id", v.GroupID); err != nil {
		return err
	}
	if err := checkID("vote_id", v.VoteID); err != nil {
		return err
	}
	if m.ownerOf(v.GroupID) == m.me {
		if msgType != wire.MsgGroupVoteOpen {
			return wire.Errorf(wire.CodeInvalidParams, "%s comes from a group's owner, and this agent owns group %s", msgType, v.GroupID)
		}
		return m.proposalFrom(ctx, from, v)
	}
	return m.update(ctx, func(tx *store.Tx) error {
		g, err := getGroup(tx, v.GroupID)
		if err != nil {
			m.log.Debug("vote for an unknown group", "group_id", v.GroupID, "from", from)
			return nil
		}
		if err := fromOwner(g, from, msgType); err != nil {
			return err
		}
		c := *v
		old, err := getVote(tx, v.GroupID, v.VoteID)
		if err == nil {
			if old.Status == VoteClosed && msgType == wire.MsgGroupVoteOpen {
				return nil // the result came first (or again)
			}
			if msgType == wire.MsgGroupVoteOpen {
				c.Ballots = old.Ballots // this agent's own, if it voted already
			}
		}
		evID := "vote_open:" + v.VoteID
		if msgType == wire.MsgGroupVoteResult {
			evID = "vote_result:" + v.VoteID
		}
		if err := m.record(tx, v.GroupID, evID, msgType, from, &c); err != nil {
			return err
		}
		return putVote(tx, &c)
	})
}

// proposalFrom opens a member's proposal on the owner's agent.
func (m *Manager) proposalFrom(ctx context.Context, from string, v *Vote) error {
	if v.Proposer != from {
		return denied("%s cannot propose a vote in the name of %s", from, v.Proposer)
	}
	c := &Vote{VoteID: v.VoteID, GroupID: v.GroupID, Title: v.Title, Description: v.Description,
		Options: v.Options, Consensus: v.Consensus, Quorum: v.Quorum, DeadlineSeconds: v.DeadlineSeconds, Proposer: from}
	if err := checkVote(c); err != nil {
		return err
	}
	var arm *Vote
	err := m.update(ctx, func(tx *store.Tx) error {
		arm = nil
		g, err := loadActive(tx, v.GroupID)
		if err != nil {
			return err
		}
		if g.member(from) == nil {
			return denied("%s is not a member of group %s", from, g.GroupID)
		}
		if _, err := getVote(tx, c.GroupID, c.VoteID); err == nil {
			return nil // proposed again
		}
		if c.Quorum > len(g.Members) {
			return invalid("quorum", "quorum %d is more than the %d members", c.Quorum, len(g.Members))
		}
		o := *c
		if err := m.openAt(tx, g, &o); err != nil {
			return err
		}
		arm = &o
		return nil
	})
	if err == nil && arm != nil {
		m.arm(arm)
	}
	return err
}
