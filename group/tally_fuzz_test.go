package group_test

import (
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/group"
)

// voteFromBytes builds a vote from fuzz input: byte 0 picks the consensus,
// byte 1 the number of options (2 to 5), byte 2 the quorum; then each
// voter takes two bytes: its weight (1 to 4, 0 mod 5: no ballot) and its
// choice (an option, or for ranked votes a rotation of the options cut to
// a length).
func voteFromBytes(b []byte) *group.Vote {
	types := []string{group.Majority, group.Supermajority, group.Unanimous, group.Weighted, group.Ranked}
	at := func(i int) int {
		if i < len(b) {
			return int(b[i])
		}
		return 0
	}
	v := &group.Vote{VoteID: "v", GroupID: "g", Consensus: types[at(0)%len(types)], Quorum: at(2) % 6}
	for i := range 2 + at(1)%4 {
		v.Options = append(v.Options, string(rune('a'+i)))
	}
	for i := 3; i+1 < len(b) && len(v.Voters) < 64; i += 2 {
		id := string(rune('A' + len(v.Voters)))
		v.Voters = append(v.Voters, group.Voter{AgentID: id, Weight: float64(1 + at(i)%4)})
		if at(i)%5 == 0 {
			continue
		}
		c := at(i+1) % len(v.Options)
		bl := group.Ballot{Voter: id, Option: v.Options[c]}
		if v.Consensus == group.Ranked {
			rot := append(slices.Clone(v.Options[c:]), v.Options[:c]...)
			bl.Option, bl.Ranking = "", rot[:1+at(i+1)/len(v.Options)%len(rot)]
		}
		v.Ballots = append(v.Ballots, bl)
	}
	return v
}

// FuzzCount checks the invariants of every tally: a known outcome, a
// winner exactly when decided, a winner that meets its rule, and counts
// that add up.
func FuzzCount(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 1, 0, 1, 1})
	f.Add([]byte{3, 0, 0, 4, 0, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{4, 1, 0, 1, 0, 1, 0, 1, 4, 1, 5, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		v := voteFromBytes(b)
		r := group.Count(v)
		switch r.Outcome {
		case group.OutcomeDecided, group.OutcomeTie, group.OutcomeNoConsensus, group.OutcomeNoQuorum:
		default:
			t.Fatalf("outcome %q", r.Outcome)
		}
		if (r.Winner != "") != (r.Outcome == group.OutcomeDecided) {
			t.Fatalf("winner %q with outcome %s", r.Winner, r.Outcome)
		}
		if r.Tally.Cast != len(v.Ballots) || r.Tally.Cast < r.Tally.Quorum && r.Outcome != group.OutcomeNoQuorum {
			t.Fatalf("cast %d of %d ballots, quorum %d, outcome %s", r.Tally.Cast, len(v.Ballots), r.Tally.Quorum, r.Outcome)
		}
		votes := 0
		var top group.OptionCount
		for _, c := range r.Tally.Counts {
			votes += c.Votes
			if c.Option == r.Winner {
				top = c
			}
		}
		if votes != r.Tally.Cast {
			t.Fatalf("counts add up to %d, cast %d", votes, r.Tally.Cast)
		}
		if r.Winner == "" {
			return
		}
		switch v.Consensus {
		case group.Majority:
			if 2*top.Votes <= r.Tally.Cast {
				t.Fatalf("majority winner with %d of %d", top.Votes, r.Tally.Cast)
			}
		case group.Supermajority:
			if 3*top.Votes < 2*r.Tally.Cast {
				t.Fatalf("supermajority winner with %d of %d", top.Votes, r.Tally.Cast)
			}
		case group.Unanimous:
			if top.Votes != len(v.Voters) {
				t.Fatalf("unanimous winner with %d of %d voters", top.Votes, len(v.Voters))
			}
		case group.Weighted:
			if 2*top.Weight <= r.Tally.CastWeight {
				t.Fatalf("weighted winner with %v of %v", top.Weight, r.Tally.CastWeight)
			}
		case group.Ranked:
			last := r.Tally.Rounds[len(r.Tally.Rounds)-1]
			counted := 0
			won := 0
			for _, c := range last.Counts {
				counted += c.Votes
				if c.Option == r.Winner {
					won = c.Votes
				}
			}
			if 2*won <= counted || len(r.Tally.Rounds) > len(v.Options) {
				t.Fatalf("ranked winner with %d of %d in round %d", won, counted, len(r.Tally.Rounds))
			}
		}
	})
}
