package group_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// voteState is a vote's status and outcome on n ("" when n lacks it).
func voteState(n *node, groupID, voteID string) (status, outcome, winner string) {
	v, err := n.gm.Vote(groupID, voteID)
	if err != nil {
		return "", "", ""
	}
	if v.Result != nil {
		outcome, winner = v.Result.Outcome, v.Result.Winner
	}
	return v.Status, outcome, winner
}

func ballotOf(v *group.Vote, voter string) string {
	for _, b := range v.Ballots {
		if b.Voter == voter {
			return b.Option + strings.Join(b.Ranking, ">")
		}
	}
	return ""
}

func TestVotes(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	owner, ms := star(t, clock, 4)
	a, b, c, outsider := ms[0], ms[1], ms[2], ms[3]
	g := formGroup(t, owner, []*node{a, b, c}, group.InviteRequest{Weight: 3})
	all := []*node{owner, a, b, c}

	t.Run("a member's proposal, decided when every voter has voted", func(t *testing.T) {
		v, opened, err := a.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "ship it?", Options: []string{"yes", "no"}, Consensus: group.Weighted})
		if err != nil || opened || v.Status != group.VoteProposed {
			t.Fatalf("OpenVote from a member: %+v opened %v, %v; want proposed and sent", v, opened, err)
		}
		for _, n := range all {
			testutil.Eventually(t, pollTimeout, n.name+" seeing the vote open", func() bool {
				s, _, _ := voteState(n, g.GroupID, v.VoteID)
				return s == group.VoteOpen
			})
		}
		open, _ := owner.gm.Vote(g.GroupID, v.VoteID)
		if len(open.Voters) != 4 || open.Deadline.Sub(open.OpenedAt.Time) != group.DefaultVoteDeadline {
			t.Errorf("voters %v, deadline %s after opening; want the 4 members and the default deadline", open.Voters, open.Deadline.Sub(open.OpenedAt.Time))
		}
		// Heads: no 3 to 1; weights: yes 3 (a) to no 3: a tie, not a no.
		for n, choice := range map[*node]string{owner: "no", a: "yes", b: "no", c: "no"} {
			if _, _, err := n.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: choice}); err != nil {
				t.Fatalf("%s Cast: %v", n.name, err)
			}
		}
		for _, n := range all {
			testutil.Eventually(t, pollTimeout, n.name+" receiving the result", func() bool {
				s, o, _ := voteState(n, g.GroupID, v.VoteID)
				return s == group.VoteClosed && o == group.OutcomeTie
			})
		}
		got, _ := c.gm.Vote(g.GroupID, v.VoteID)
		if len(got.Result.Tally.Ballots) != 4 || got.Result.Tally.CastWeight != 6 {
			t.Errorf("member's copy of the tally = %+v, want 4 ballots weighing 6", got.Result.Tally)
		}
	})

	t.Run("re-cast replaces; the deadline closes the vote", func(t *testing.T) {
		v, opened, err := owner.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "lunch", Options: []string{"pizza", "soup"}, DeadlineSeconds: 60})
		if err != nil || !opened {
			t.Fatalf("OpenVote on the owner: opened %v, %v", opened, err)
		}
		testutil.Eventually(t, pollTimeout, "b seeing the vote", func() bool { s, _, _ := voteState(b, g.GroupID, v.VoteID); return s == group.VoteOpen })
		for _, choice := range []string{"soup", "pizza"} {
			if _, counted, err := b.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: choice}); err != nil || counted {
				t.Fatalf("b Cast %s: counted %v, %v", choice, counted, err)
			}
		}
		if _, counted, err := owner.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "pizza"}); err != nil || !counted {
			t.Fatalf("owner Cast: counted %v, %v", counted, err)
		}
		testutil.Eventually(t, pollTimeout, "b's second ballot on the owner", func() bool {
			o, _ := owner.gm.Vote(g.GroupID, v.VoteID)
			return o != nil && ballotOf(o, b.id()) == "pizza"
		})
		clock.Advance(59 * time.Second)
		if s, _, _ := voteState(owner, g.GroupID, v.VoteID); s != group.VoteOpen {
			t.Fatalf("vote %s before its deadline", s)
		}
		clock.Advance(2 * time.Second)
		testutil.Eventually(t, pollTimeout, "the vote closed at its deadline", func() bool {
			s, o, w := voteState(owner, g.GroupID, v.VoteID)
			return s == group.VoteClosed && o == group.OutcomeDecided && w == "pizza"
		})
		got, _ := owner.gm.Vote(g.GroupID, v.VoteID)
		if len(got.Result.Tally.Ballots) != 2 {
			t.Errorf("ballots %v, want b's replaced one and the owner's", got.Result.Tally.Ballots)
		}
		_, _, err = owner.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "soup"})
		wantCode(t, err, wire.CodeInvalidStateChange)
		testutil.Eventually(t, pollTimeout, "b receiving the result", func() bool { s, _, _ := voteState(b, g.GroupID, v.VoteID); return s == group.VoteClosed })
		_, _, err = b.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "soup"})
		wantCode(t, err, wire.CodeInvalidStateChange)
	})

	t.Run("a non-member's ballot is refused", func(t *testing.T) {
		v, _, err := owner.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "t", Options: []string{"x", "y"}, DeadlineSeconds: 60})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = outsider.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "x"})
		wantCode(t, err, wire.CodeNotFound)
		// Sent straight to the owner, it is refused there (403).
		if err := outsider.Network.SendToPeer(ctx, owner.id(), wire.MsgGroupBallot,
			map[string]any{"group_id": g.GroupID, "vote_id": v.VoteID, "option": "x"}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, pollTimeout, "the forged ballot refused", func() bool {
			items, _, err := outsider.Network.Outbox().List(peer.OutboxQuery{State: "dead", Peer: owner.id(), Limit: 10})
			return err == nil && len(items) == 1 && strings.Contains(items[0].LastError, string(wire.CodePermissionDenied))
		})
		o, _ := owner.gm.Vote(g.GroupID, v.VoteID)
		if len(o.Ballots) != 0 {
			t.Errorf("ballots %v, want none", o.Ballots)
		}
		_, _, err = owner.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "z"})
		wantCode(t, err, wire.CodeInvalidParams)
		clock.Advance(61 * time.Second)
		testutil.Eventually(t, pollTimeout, "the vote closed", func() bool { s, _, _ := voteState(owner, g.GroupID, v.VoteID); return s == group.VoteClosed })
	})

	t.Run("a member down at the close receives the result on return", func(t *testing.T) {
		v, _, err := owner.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "q", Options: []string{"x", "y"},
			Consensus: group.Supermajority, Quorum: 4, DeadlineSeconds: 30})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, pollTimeout, "c seeing the vote", func() bool { s, _, _ := voteState(c, g.GroupID, v.VoteID); return s == group.VoteOpen })
		c.stop()
		for _, n := range []*node{owner, a, b} {
			if _, _, err := n.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "x"}); err != nil {
				t.Fatalf("%s Cast: %v", n.name, err)
			}
		}
		testutil.Eventually(t, pollTimeout, "three ballots on the owner", func() bool {
			o, _ := owner.gm.Vote(g.GroupID, v.VoteID)
			return len(o.Ballots) == 3
		})
		clock.Advance(31 * time.Second)
		testutil.Eventually(t, pollTimeout, "the vote closed without quorum", func() bool {
			s, o, _ := voteState(owner, g.GroupID, v.VoteID)
			return s == group.VoteClosed && o == group.OutcomeNoQuorum
		})
		c.open()
		testutil.Eventually(t, pollTimeout, "c receiving the result", func() bool {
			s, o, _ := voteState(c, g.GroupID, v.VoteID)
			return s == group.VoteClosed && o == group.OutcomeNoQuorum
		})
	})

	t.Run("an open vote survives the owner's restart", func(t *testing.T) {
		v, _, err := owner.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "r", Options: []string{"x", "y"}, DeadlineSeconds: 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := owner.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "y"}); err != nil {
			t.Fatal(err)
		}
		owner.restart()
		clock.Advance(21 * time.Second)
		testutil.Eventually(t, pollTimeout, "the vote closed after the restart", func() bool {
			s, o, w := voteState(owner, g.GroupID, v.VoteID)
			return s == group.VoteClosed && o == group.OutcomeDecided && w == "y"
		})
	})
}

func TestVoteProposalChecks(t *testing.T) {
	ctx := context.Background()
	owner, ms := star(t, nil, 1)
	g := formGroup(t, owner, ms)
	tests := []struct {
		name string
		req  group.VoteRequest
	}{
		{"no title", group.VoteRequest{Options: []string{"a", "b"}}},
		{"one option", group.VoteRequest{Title: "t", Options: []string{"a"}}},
		{"duplicate options", group.VoteRequest{Title: "t", Options: []string{"a", "a"}}},
		{"unknown consensus", group.VoteRequest{Title: "t", Options: []string{"a", "b"}, Consensus: "plurality"}},
		{"quorum above the members", group.VoteRequest{Title: "t", Options: []string{"a", "b"}, Quorum: 3}},
		{"negative deadline", group.VoteRequest{Title: "t", Options: []string{"a", "b"}, DeadlineSeconds: -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := owner.gm.OpenVote(ctx, g.GroupID, tc.req)
			wantCode(t, err, wire.CodeInvalidParams)
		})
	}
	t.Run("ranked ballots", func(t *testing.T) {
		v, _, err := owner.gm.OpenVote(ctx, g.GroupID, group.VoteRequest{Title: "t", Options: []string{"a", "b", "c"}, Consensus: group.Ranked})
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []group.BallotRequest{{}, {Ranking: []string{"a", "a"}}, {Ranking: []string{"d"}}} {
			_, _, err := owner.gm.Cast(ctx, g.GroupID, v.VoteID, bad)
			wantCode(t, err, wire.CodeInvalidParams)
		}
		got, _, err := owner.gm.Cast(ctx, g.GroupID, v.VoteID, group.BallotRequest{Option: "b"})
		if err != nil || ballotOf(got, owner.id()) != "b" || len(got.Ballots[0].Ranking) != 1 {
			t.Errorf("a single option on a ranked vote = %+v, %v; want a ranking of one", got.Ballots, err)
		}
	})
}
