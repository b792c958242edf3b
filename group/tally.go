package group

import (
	"slices"

	"github.com/synapse-edge/synapse/wire"
)

// Consensus types (seed 000 VotingHandler).
const (
	// Majority: an option wins with more than 1/2 of the ballots cast.
	Majority = "majority"
	// Supermajority: an option wins with at least 2/3 of the ballots cast.
	Supermajority = "supermajority"
	// Unanimous: an option wins when every voter cast a ballot and all
	// ballots chose it.
	Unanimous = "unanimous"
	// Weighted: an option wins with more than 1/2 of the weight of the
	// ballots cast, each ballot weighing its voter's weight.
	Weighted = "weighted"
	// Ranked: ballots rank options; instant-runoff (see Tally).
	Ranked = "ranked"
)

// Outcomes of a closed vote.
const (
	// OutcomeDecided: Winner reached the consensus.
	OutcomeDecided = "decided"
	// OutcomeTie: no option reached the consensus and the leading options
	// have the same support.
	OutcomeTie = "tie"
	// OutcomeNoConsensus: no option reached the consensus and one leads.
	OutcomeNoConsensus = "no_consensus"
	// OutcomeNoQuorum: fewer ballots than the quorum were cast.
	OutcomeNoQuorum = "no_quorum"
	// OutcomeCancelled: the group was disbanded while the vote was open.
	OutcomeCancelled = "cancelled"
)

// Vote states.
const (
	// VoteProposed: sent to the owner's agent, which has not opened it yet
	// (on the proposer's agent only).
	VoteProposed = "proposed"
	VoteOpen     = "open"
	VoteClosed   = "closed"
)

// Vote is a proposal put to a group's members.
type Vote struct {
	VoteID      string   `json:"vote_id" msgpack:"vote_id"`
	GroupID     string   `json:"group_id" msgpack:"group_id"`
	Title       string   `json:"title" msgpack:"title"`
	Description string   `json:"description,omitempty" msgpack:"description,omitempty"`
	Options     []string `json:"options" msgpack:"options"`
	Consensus   string   `json:"consensus" msgpack:"consensus"`
	// Quorum is the number of ballots needed for any outcome but
	// no_quorum (0: none).
	Quorum   int    `json:"quorum" msgpack:"quorum"`
	Proposer string `json:"proposer" msgpack:"proposer"`
	Status   string `json:"status" msgpack:"status"`
	// DeadlineSeconds is the proposal's time limit; Deadline is set when
	// the owner's agent opens the vote.
	DeadlineSeconds int       `json:"deadline_seconds" msgpack:"deadline_seconds"`
	OpenedAt        wire.Time `json:"opened_at,omitzero" msgpack:"opened_at,omitempty"`
	Deadline        wire.Time `json:"deadline,omitzero" msgpack:"deadline,omitempty"`
	ClosedAt        wire.Time `json:"closed_at,omitzero" msgpack:"closed_at,omitempty"`
	// Voters are the members when the vote opened, with their weights.
	Voters []Voter `json:"voters,omitempty" msgpack:"voters,omitempty"`
	// Ballots are the ballots received: every one on the owner's agent,
	// this agent's own elsewhere until the result brings them all.
	Ballots []Ballot `json:"ballots,omitempty" msgpack:"ballots,omitempty"`
	Result  *Result  `json:"result,omitempty" msgpack:"result,omitempty"`
}

// Voter is a member entitled to vote, with its weight at the opening.
type Voter struct {
	AgentID string  `json:"agent_id" msgpack:"agent_id"`
	Weight  float64 `json:"weight" msgpack:"weight"`
}

// Ballot is one voter's choice: Option, or for ranked votes Ranking (the
// options in order of preference; options left out are ranked below all
// others).
type Ballot struct {
	Voter   string    `json:"voter" msgpack:"voter"`
	Option  string    `json:"option,omitempty" msgpack:"option,omitempty"`
	Ranking []string  `json:"ranking,omitempty" msgpack:"ranking,omitempty"`
	CastAt  wire.Time `json:"cast_at" msgpack:"cast_at"`
}

// BallotRequest is the body of POST /group/{id}/vote/{vote_id}/ballot.
type BallotRequest struct {
	Option  string   `json:"option,omitempty" msgpack:"option,omitempty"`
	Ranking []string `json:"ranking,omitempty" msgpack:"ranking,omitempty"`
}

// Result is the outcome of a closed vote with its full tally.
type Result struct {
	Outcome string `json:"outcome" msgpack:"outcome"`
	Winner  string `json:"winner,omitempty" msgpack:"winner,omitempty"`
	Tally   Tally  `json:"tally" msgpack:"tally"`
}

// Tally is how a result was reached.
type Tally struct {
	Consensus string `json:"consensus" msgpack:"consensus"`
	// Rule says in words what it took to win.
	Rule      string `json:"rule" msgpack:"rule"`
	Eligible  int    `json:"eligible" msgpack:"eligible"`
	Cast      int    `json:"cast" msgpack:"cast"`
	Quorum    int    `json:"quorum" msgpack:"quorum"`
	QuorumMet bool   `json:"quorum_met" msgpack:"quorum_met"`
	// Counts are the ballots (for ranked votes: first preferences) per
	// option, in the proposal's order, with their weight for weighted
	// votes.
	Counts []OptionCount `json:"counts" msgpack:"counts"`
	// CastWeight is the weight of the ballots cast (weighted votes).
	CastWeight float64 `json:"cast_weight,omitempty" msgpack:"cast_weight,omitempty"`
	// Rounds are the instant-runoff rounds (ranked votes).
	Rounds []Round `json:"rounds,omitempty" msgpack:"rounds,omitempty"`
	// Ballots are every ballot counted, by voter.
	Ballots []Ballot `json:"ballots" msgpack:"ballots"`
}

// OptionCount is the support of one option.
type OptionCount struct {
	Option string  `json:"option" msgpack:"option"`
	Votes  int     `json:"votes" msgpack:"votes"`
	Weight float64 `json:"weight,omitempty" msgpack:"weight,omitempty"`
}

// Round is one instant-runoff round.
type Round struct {
	Round int `json:"round" msgpack:"round"`
	// Counts are the ballots for each option still in the running.
	Counts []OptionCount `json:"counts" msgpack:"counts"`
	// Exhausted counts ballots that rank none of the remaining options.
	Exhausted int `json:"exhausted" msgpack:"exhausted"`
	// Eliminated is the option dropped after this round, if any.
	Eliminated string `json:"eliminated,omitempty" msgpack:"eliminated,omitempty"`
}

// checkConsensus validates a consensus type ("" is majority).
func checkConsensus(c string) (string, error) {
	switch c {
	case "":
		return Majority, nil
	case Majority, Supermajority, Unanimous, Weighted, Ranked:
		return c, nil
	}
	return "", invalid("consensus", "consensus must be majority, supermajority, unanimous, weighted or ranked")
}

// checkBallot validates a ballot against a vote's options and type.
func checkBallot(v *Vote, b BallotRequest) error {
	if v.Consensus == Ranked {
		if b.Option != "" && len(b.Ranking) == 0 {
			b.Ranking = []string{b.Option}
		}
		if len(b.Ranking) == 0 {
			return invalid("ranking", "a ranked vote takes a ranking: the options in order of preference")
		}
		seen := map[string]bool{}
		for _, o := range b.Ranking {
			if !slices.Contains(v.Options, o) {
				return invalid("ranking", "%q is not an option of this vote", o)
			}
			if seen[o] {
				return invalid("ranking", "%q is ranked twice", o)
			}
			seen[o] = true
		}
		return nil
	}
	if len(b.Ranking) > 0 {
		return invalid("ranking", "only ranked votes take a ranking; give one option")
	}
	if !slices.Contains(v.Options, b.Option) {
		return invalid("option", "option %q is not one of %q", b.Option, v.Options)
	}
	return nil
}

// normalBallot is the ballot as stored: a ranked vote's single option
// becomes a ranking of one.
func normalBallot(v *Vote, b BallotRequest) BallotRequest {
	if v.Consensus == Ranked && len(b.Ranking) == 0 && b.Option != "" {
		return BallotRequest{Ranking: []string{b.Option}}
	}
	return b
}

// Count closes a vote: it counts the ballots of the voters (ballots of
// anyone else are ignored) and returns the outcome.
//
// Every type first checks the quorum: fewer ballots than Quorum gives
// no_quorum (the counts are still reported). Then:
//
//   - majority: the option with more than half of the ballots cast wins;
//   - supermajority: the option with at least two thirds of them wins;
//   - unanimous: the option every voter chose wins (a voter who did not
//     vote prevents unanimity);
//   - weighted: the option with more than half of the weight of the
//     ballots cast wins (weights are summed exactly, in millionths);
//   - ranked (instant-runoff): each round counts every ballot for its
//     highest-ranked option still in the running; an option with more
//     than half of the ballots counted in that round (exhausted ballots
//     do not count) wins. Otherwise, if every option still in the running
//     has the same count, the vote is a tie; else the option with the
//     fewest votes is eliminated and another round is counted. Tie rule
//     for the elimination: among the options with the fewest votes, the
//     one with the fewest first preferences goes; if that is still a tie,
//     the one listed last in the proposal goes.
//
// When no option wins, the outcome is tie if the leading options (by
// votes; for weighted votes by weight; for ranked votes in the last
// round) have the same support, else no_consensus.
func Count(v *Vote) Result {
	voters := map[string]int64{}
	for _, vt := range v.Voters {
		voters[vt.AgentID] = units(vt.Weight)
	}
	var ballots []Ballot
	for _, b := range v.Ballots {
		if _, ok := voters[b.Voter]; ok {
			ballots = append(ballots, b)
		}
	}
	slices.SortFunc(ballots, func(a, b Ballot) int {
		switch {
		case a.Voter < b.Voter:
			return -1
		case a.Voter > b.Voter:
			return 1
		}
		return 0
	})
	t := Tally{Consensus: v.Consensus, Eligible: len(v.Voters), Cast: len(ballots), Quorum: v.Quorum, Ballots: ballots}
	if t.Ballots == nil {
		t.Ballots = []Ballot{}
	}
	t.QuorumMet = t.Cast >= v.Quorum
	votes := make([]int, len(v.Options))
	weight := make([]int64, len(v.Options))
	var castWeight int64
	for _, b := range ballots {
		choice := b.Option
		if v.Consensus == Ranked && len(b.Ranking) > 0 {
			choice = b.Ranking[0]
		}
		if i := slices.Index(v.Options, choice); i >= 0 {
			votes[i]++
			weight[i] += voters[b.Voter]
		}
		castWeight += voters[b.Voter]
	}
	for i, o := range v.Options {
		c := OptionCount{Option: o, Votes: votes[i]}
		if v.Consensus == Weighted {
			c.Weight = float64(weight[i]) / weightUnit
		}
		t.Counts = append(t.Counts, c)
	}
	if v.Consensus == Weighted {
		t.CastWeight = float64(castWeight) / weightUnit
	}
	r := Result{Tally: t}
	var support []int64 // per option, what decides a tie
	switch v.Consensus {
	case Majority:
		r.Tally.Rule = "more than 1/2 of the ballots cast"
		r.Winner = winner(v.Options, votes, func(n int) bool { return 2*n > t.Cast })
	case Supermajority:
		r.Tally.Rule = "at least 2/3 of the ballots cast"
		r.Winner = winner(v.Options, votes, func(n int) bool { return t.Cast > 0 && 3*n >= 2*t.Cast })
	case Unanimous:
		r.Tally.Rule = "every voter casts a ballot for the same option"
		r.Winner = winner(v.Options, votes, func(n int) bool { return n > 0 && n == t.Eligible })
	case Weighted:
		r.Tally.Rule = "more than 1/2 of the weight of the ballots cast"
		for i, o := range v.Options {
			if 2*weight[i] > castWeight {
				r.Winner = o
			}
		}
		support = weight
	case Ranked:
		r.Tally.Rule = "more than 1/2 of the ballots counted in a round (instant-runoff)"
		var last []int64
		r.Tally.Rounds, r.Winner, last = runoff(v.Options, ballots, votes)
		support = last
	}
	if support == nil {
		support = make([]int64, len(votes))
		for i, n := range votes {
			support[i] = int64(n)
		}
	}
	switch {
	case !t.QuorumMet:
		r.Outcome, r.Winner = OutcomeNoQuorum, ""
	case r.Winner != "":
		r.Outcome = OutcomeDecided
	case leadersTied(support):
		r.Outcome = OutcomeTie
	default:
		r.Outcome = OutcomeNoConsensus
	}
	return r
}

// winner is the first option whose votes pass (at most one can for the
// thresholds above one half).
func winner(options []string, votes []int, pass func(int) bool) string {
	for i, o := range options {
		if pass(votes[i]) {
			return o
		}
	}
	return ""
}

// leadersTied reports whether at least two options share the highest
// non-zero support.
func leadersTied(support []int64) bool {
	top, n := int64(0), 0
	for _, s := range support {
		switch {
		case s > top:
			top, n = s, 1
		case s == top && s > 0:
			n++
		}
	}
	return n > 1
}

// runoff counts instant-runoff rounds. first is the first-preference
// count per option. It returns the rounds, the winner ("" if none) and the
// last round's count per option (0 for eliminated ones).
func runoff(options []string, ballots []Ballot, first []int) ([]Round, string, []int64) {
	in := make([]bool, len(options))
	for i := range in {
		in[i] = true
	}
	var rounds []Round
	// Each round eliminates one option: at most len(options) rounds.
	for n := 1; n <= len(options); n++ {
		count := make([]int64, len(options))
		counted, exhausted := 0, 0
		for _, b := range ballots {
			top := -1
			for _, o := range b.Ranking {
				if i := slices.Index(options, o); i >= 0 && in[i] {
					top = i
					break
				}
			}
			if top < 0 {
				exhausted++
				continue
			}
			count[top]++
			counted++
		}
		r := Round{Round: n, Exhausted: exhausted}
		remaining := 0
		for i, o := range options {
			if in[i] {
				r.Counts = append(r.Counts, OptionCount{Option: o, Votes: int(count[i])})
				remaining++
			}
		}
		for i, o := range options {
			if in[i] && 2*count[i] > int64(counted) {
				rounds = append(rounds, r)
				return rounds, o, count
			}
		}
		if counted == 0 || remaining < 2 || allEqual(count, in) {
			rounds = append(rounds, r)
			return rounds, "", count
		}
		out := eliminate(count, first, in)
		in[out] = false
		r.Eliminated = options[out]
		rounds = append(rounds, r)
	}
	return rounds, "", make([]int64, len(options))
}

func allEqual(count []int64, in []bool) bool {
	v := int64(-1)
	for i, c := range count {
		if !in[i] {
			continue
		}
		if v >= 0 && c != v {
			return false
		}
		v = c
	}
	return true
}

// eliminate picks the option to drop: the fewest votes, then the fewest
// first preferences, then the last listed.
func eliminate(count []int64, first []int, in []bool) int {
	pick := -1
	for i := range count {
		if !in[i] {
			continue
		}
		if pick < 0 || count[i] < count[pick] ||
			(count[i] == count[pick] && first[i] < first[pick]) ||
			(count[i] == count[pick] && first[i] == first[pick]) { // later listed wins the drop
			pick = i
		}
	}
	return pick
}
