package group_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/group"
)

// vote builds a vote among voters "a", "b", ... with the given weights
// (nil: all 1) and ballots: "x" is an option, "x>y>z" a ranking.
func vote(consensus string, options []string, quorum int, weights []float64, ballots ...string) *group.Vote {
	v := &group.Vote{VoteID: "v", GroupID: "g", Title: "t", Options: options, Consensus: consensus, Quorum: quorum}
	n := max(len(weights), len(ballots))
	for i := range n {
		w := 1.0
		if i < len(weights) {
			w = weights[i]
		}
		v.Voters = append(v.Voters, group.Voter{AgentID: voterName(i), Weight: w})
	}
	for i, b := range ballots {
		if b == "" {
			continue // this voter did not vote
		}
		bl := group.Ballot{Voter: voterName(i)}
		if consensus == group.Ranked {
			bl.Ranking = strings.Split(b, ">")
		} else {
			bl.Option = b
		}
		v.Ballots = append(v.Ballots, bl)
	}
	return v
}

func voterName(i int) string { return string(rune('a' + i)) }

func TestCount(t *testing.T) {
	yn := []string{"yes", "no"}
	abc := []string{"a", "b", "c"}
	tests := []struct {
		name        string
		v           *group.Vote
		wantOutcome string
		wantWinner  string
		wantRounds  int // ranked only
	}{
		{"majority 3 of 5", vote(group.Majority, yn, 0, nil, "yes", "yes", "no", "yes", "no"), group.OutcomeDecided, "yes", 0},
		{"majority needs more than half", vote(group.Majority, abc, 0, nil, "a", "a", "b", "c"), group.OutcomeNoConsensus, "", 0},
		{"majority tie 2-2", vote(group.Majority, yn, 0, nil, "yes", "no", "yes", "no"), group.OutcomeTie, "", 0},
		{"majority tie 2-2-1", vote(group.Majority, abc, 0, nil, "a", "b", "a", "b", "c"), group.OutcomeTie, "", 0},
		{"majority counts ballots cast, not voters", vote(group.Majority, yn, 0, nil, "yes", "yes", "no", "", ""), group.OutcomeDecided, "yes", 0},
		{"majority below quorum", vote(group.Majority, yn, 4, nil, "yes", "yes", "yes", "", ""), group.OutcomeNoQuorum, "", 0},
		{"majority at quorum", vote(group.Majority, yn, 3, nil, "yes", "yes", "no", "", ""), group.OutcomeDecided, "yes", 0},
		{"no ballots at all", vote(group.Majority, yn, 0, nil, "", ""), group.OutcomeNoConsensus, "", 0},

		{"supermajority exactly 2/3", vote(group.Supermajority, yn, 0, nil, "yes", "yes", "no"), group.OutcomeDecided, "yes", 0},
		{"supermajority 4 of 5", vote(group.Supermajority, yn, 0, nil, "yes", "yes", "no", "yes", "yes"), group.OutcomeDecided, "yes", 0},
		{"supermajority 3 of 5 is short", vote(group.Supermajority, yn, 0, nil, "yes", "yes", "no", "yes", "no"), group.OutcomeNoConsensus, "", 0},
		{"supermajority tie", vote(group.Supermajority, yn, 0, nil, "yes", "no"), group.OutcomeTie, "", 0},
		{"supermajority below quorum", vote(group.Supermajority, yn, 5, nil, "yes", "yes", "yes", "yes", ""), group.OutcomeNoQuorum, "", 0},

		{"unanimous all agree", vote(group.Unanimous, yn, 0, nil, "yes", "yes", "yes"), group.OutcomeDecided, "yes", 0},
		{"unanimous one dissent", vote(group.Unanimous, yn, 0, nil, "yes", "yes", "no"), group.OutcomeNoConsensus, "", 0},
		{"unanimous one abstains", vote(group.Unanimous, yn, 0, nil, "yes", "yes", ""), group.OutcomeNoConsensus, "", 0},
		{"unanimous split evenly", vote(group.Unanimous, yn, 0, nil, "yes", "no"), group.OutcomeTie, "", 0},

		// Heads say no (4 to 1); the weight says yes (5 to 4).
		{"weighted differs from head count", vote(group.Weighted, yn, 0, []float64{5, 1, 1, 1, 1}, "yes", "no", "no", "no", "no"), group.OutcomeDecided, "yes", 0},
		// Heads say yes (3 to 1); the weight says no (4 to 3).
		{"weighted heavy dissenter", vote(group.Weighted, yn, 0, []float64{1, 1, 1, 4}, "yes", "yes", "yes", "no"), group.OutcomeDecided, "no", 0},
		{"weighted exact half is a tie", vote(group.Weighted, yn, 0, []float64{2, 1, 1}, "yes", "no", "no"), group.OutcomeTie, "", 0},
		{"weighted fractional weights sum exactly", vote(group.Weighted, yn, 0, []float64{0.1, 0.2, 0.3}, "yes", "yes", "no"), group.OutcomeTie, "", 0},
		{"weighted counts only ballots cast", vote(group.Weighted, yn, 0, []float64{1, 1, 10}, "yes", "no", ""), group.OutcomeTie, "", 0},
		{"weighted below quorum", vote(group.Weighted, yn, 3, []float64{5, 1, 1}, "yes", "no", ""), group.OutcomeNoQuorum, "", 0},

		{"ranked first round", vote(group.Ranked, abc, 0, nil, "a>b", "a", "a>c", "b", "c"), group.OutcomeDecided, "a", 1},
		// Round 1: a 2, b 1, c 2; b goes; its ballot moves to c: c 3 of 5.
		{"ranked decided in round 2", vote(group.Ranked, abc, 0, nil, "a>b", "a", "b>c>a", "c", "c>a"), group.OutcomeDecided, "c", 2},
		// Round 1: a 2, b 2, c 1 (its ballot ranks nothing else): c goes;
		// round 2: a 2, b 2 with one ballot exhausted: a tie.
		{"ranked tie after exhaustion", vote(group.Ranked, abc, 0, nil, "a", "a", "b", "b", "c"), group.OutcomeTie, "", 2},
		{"ranked all equal in round 1", vote(group.Ranked, abc, 0, nil, "a", "b", "c"), group.OutcomeTie, "", 1},
		// Round 1: a 2, b 1, c 1, d 0: d goes (fewest). Round 2: b and c
		// tie at 1 with one first preference each: the later listed, c,
		// goes; its ballot moves to b. Round 3: a 2, b 2: a tie.
		{"ranked elimination tie goes to the later option", vote(group.Ranked, []string{"a", "b", "c", "d"}, 0, nil, "a", "a", "b", "c>b"), group.OutcomeTie, "", 3},
		// Round 1: a 3, b 2, c 2, d 0 of 7: d goes; round 2 the same: b
		// and c tie at 2 with 2 first preferences; c (listed later) goes;
		// its ballots rank b next: b 4 of 7 wins in round 3.
		{"ranked decided in round 3", vote(group.Ranked, []string{"a", "b", "c", "d"}, 0, nil, "a", "a", "a", "b", "b", "c>b", "c>b"), group.OutcomeDecided, "b", 3},
		{"ranked below quorum", vote(group.Ranked, abc, 4, nil, "a", "a", "b", ""), group.OutcomeNoQuorum, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := group.Count(tc.v)
			if r.Outcome != tc.wantOutcome || r.Winner != tc.wantWinner {
				t.Fatalf("outcome %s winner %q, want %s %q; tally %+v", r.Outcome, r.Winner, tc.wantOutcome, tc.wantWinner, r.Tally)
			}
			if tc.v.Consensus == group.Ranked && tc.wantRounds > 0 && len(r.Tally.Rounds) != tc.wantRounds {
				t.Errorf("%d rounds, want %d: %+v", len(r.Tally.Rounds), tc.wantRounds, r.Tally.Rounds)
			}
			if got, want := r.Tally.Cast, len(tc.v.Ballots); got != want {
				t.Errorf("cast = %d, want %d", got, want)
			}
			if got, want := r.Tally.Eligible, len(tc.v.Voters); got != want {
				t.Errorf("eligible = %d, want %d", got, want)
			}
			if got, want := len(r.Tally.Counts), len(tc.v.Options); got != want {
				t.Errorf("%d counts, want one per option (%d)", got, want)
			}
			if r.Tally.Rule == "" {
				t.Error("the tally does not say what it took to win")
			}
		})
	}
}

func TestCountTallyDetail(t *testing.T) {
	t.Run("counts and weights per option", func(t *testing.T) {
		r := group.Count(vote(group.Weighted, []string{"yes", "no"}, 0, []float64{5, 1, 1.5}, "yes", "no", "no"))
		got := fmt.Sprint(r.Tally.Counts)
		want := fmt.Sprint([]group.OptionCount{{Option: "yes", Votes: 1, Weight: 5}, {Option: "no", Votes: 2, Weight: 2.5}})
		if got != want {
			t.Errorf("counts = %s, want %s", got, want)
		}
		if r.Tally.CastWeight != 7.5 {
			t.Errorf("cast weight = %v, want 7.5", r.Tally.CastWeight)
		}
	})
	t.Run("rounds name the eliminated options", func(t *testing.T) {
		r := group.Count(vote(group.Ranked, []string{"a", "b", "c"}, 0, nil, "a>b", "a", "b>c>a", "c", "c>a"))
		if len(r.Tally.Rounds) != 2 {
			t.Fatalf("rounds = %+v", r.Tally.Rounds)
		}
		if got := r.Tally.Rounds[0].Eliminated; got != "b" {
			t.Errorf("round 1 eliminated %q, want b", got)
		}
		var second []string
		for _, c := range r.Tally.Rounds[1].Counts {
			second = append(second, fmt.Sprintf("%s=%d", c.Option, c.Votes))
		}
		if want := []string{"a=2", "c=3"}; !slices.Equal(second, want) {
			t.Errorf("round 2 counts = %v, want %v", second, want)
		}
	})
	t.Run("ballots of non-voters are not counted", func(t *testing.T) {
		v := vote(group.Majority, []string{"yes", "no"}, 0, nil, "no", "yes", "yes")
		v.Ballots = append(v.Ballots, group.Ballot{Voter: "mallory", Option: "no"}, group.Ballot{Voter: "trudy", Option: "no"})
		r := group.Count(v)
		if r.Winner != "yes" || r.Tally.Cast != 3 || len(r.Tally.Ballots) != 3 {
			t.Errorf("winner %q cast %d ballots %v, want yes from the 3 voters", r.Winner, r.Tally.Cast, r.Tally.Ballots)
		}
	})
	t.Run("the full tally lists every ballot by voter", func(t *testing.T) {
		r := group.Count(vote(group.Majority, []string{"yes", "no"}, 0, nil, "no", "yes", "yes"))
		var got []string
		for _, b := range r.Tally.Ballots {
			got = append(got, b.Voter+":"+b.Option)
		}
		if want := []string{"a:no", "b:yes", "c:yes"}; !slices.Equal(got, want) {
			t.Errorf("ballots = %v, want %v", got, want)
		}
	})
}
