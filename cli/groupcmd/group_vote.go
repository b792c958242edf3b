package groupcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/group"
)

// VoteVerbs returns the verbs of synapse vote.
func VoteVerbs() []*command.Verb {
	return []*command.Verb{voteOpenVerb(), voteCastVerb(), voteShowVerb(), voteListVerb()}
}

func voteOpenVerb() *command.Verb {
	return &command.Verb{
		Name: "vote open", Args: "GROUP_ID TITLE", MinArgs: 2, MaxArgs: 2,
		Summary: "put a proposal to a group's members",
		About: `Consensus types: majority (more than 1/2 of the ballots cast), supermajority
(at least 2/3), unanimous (every member, the same option), weighted (more
than 1/2 of the weight cast), ranked (instant-runoff over ranked ballots).
--quorum is the number of ballots needed. The vote closes at --deadline on
the owner's clock, or when every member has voted; every member gets the
result with the full tally.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			`synapse vote open GROUP_ID "upgrade tonight?" --option yes --option no`,
			`synapse vote open GROUP_ID "next site" --option lyon,turin,graz --consensus ranked --quorum 3 --deadline 10m`,
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			var options command.List
			fs.Var(&options, "option", "an `OPTION` (repeatable, or comma-separated; at least two)")
			consensus := fs.String("consensus", group.Majority, "majority, supermajority, unanimous, weighted or ranked")
			quorum := fs.Int("quorum", 0, "ballots needed for a result (0: none)")
			deadline := fs.Duration("deadline", time.Hour, "how long the vote stays open")
			desc := fs.String("description", "", "more about the proposal")
			return func(ctx context.Context, args []string) error {
				if len(options) < 2 {
					return command.UsageErrorf("give at least two --option")
				}
				if *deadline < time.Second {
					return command.UsageErrorf("--deadline must be at least 1s")
				}
				req := group.VoteRequest{Title: args[1], Description: *desc, Options: options, Consensus: *consensus,
					Quorum: *quorum, DeadlineSeconds: int(deadline.Seconds())}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var v group.Vote
				accepted, err := s.Post(ctx, groupRoute(args[0], "vote"), nil, req, &v)
				if err != nil {
					return err
				}
				sentNote(s, accepted, "the proposal was")
				if s.Flags.JSON {
					return s.PrintJSON(&v)
				}
				printVote(s.IO.Out, &v)
				return nil
			}
		},
	}
}

func voteCastVerb() *command.Verb {
	return &command.Verb{
		Name: "vote cast", Args: "GROUP_ID VOTE_ID OPTION...", MinArgs: 3, MaxArgs: -1,
		Summary: "cast this agent's ballot (again to change it)",
		About: `Give one OPTION; for a ranked vote give the options in order of preference.
A ballot after the vote closed is refused (409).`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse vote cast GROUP_ID VOTE_ID yes", "synapse vote cast GROUP_ID VOTE_ID turin lyon"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				req := group.BallotRequest{Option: args[2]}
				if len(args) > 3 {
					req = group.BallotRequest{Ranking: args[2:]}
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var v group.Vote
				accepted, err := s.Post(ctx, groupRoute(args[0], "vote", args[1], "ballot"), nil, req, &v)
				if err != nil {
					return err
				}
				sentNote(s, accepted, "the ballot was")
				if s.Flags.JSON {
					return s.PrintJSON(&v)
				}
				fmt.Fprintf(s.IO.Out, "cast %s on %s\n", strings.Join(args[2:], " > "), args[1])
				return nil
			}
		},
	}
}

func voteShowVerb() *command.Verb {
	return &command.Verb{
		Name: "vote show", Args: "GROUP_ID VOTE_ID", MinArgs: 2, MaxArgs: 2,
		Summary: "show a vote, and its result and tally once closed",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse vote show GROUP_ID VOTE_ID", "synapse vote show GROUP_ID VOTE_ID --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var v group.Vote
				if err := s.Get(ctx, groupRoute(args[0], "vote", args[1]), nil, &v); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(&v)
				}
				printVote(s.IO.Out, &v)
				return nil
			}
		},
	}
}

func voteListVerb() *command.Verb {
	return &command.Verb{
		Name: "vote list", Args: "GROUP_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "list a group's votes",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse vote list GROUP_ID"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var out struct {
					Votes []group.Vote `json:"votes"`
				}
				if err := s.Get(ctx, groupRoute(args[0], "votes"), nil, &out); err != nil {
					return err
				}
				if s.Flags.JSON {
					if out.Votes == nil {
						out.Votes = []group.Vote{}
					}
					return s.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "VOTE ID\tTITLE\tCONSENSUS\tSTATUS\tOUTCOME\tWINNER")
				for _, v := range out.Votes {
					outcome, winner := "", ""
					if v.Result != nil {
						outcome, winner = v.Result.Outcome, v.Result.Winner
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.VoteID, v.Title, v.Consensus, v.Status, command.OrDash(outcome), command.OrDash(winner))
				}
				return tw.Flush()
			}
		},
	}
}

func printVote(w io.Writer, v *group.Vote) {
	rows := []command.KV{
		{"vote_id", v.VoteID},
		{"title", v.Title},
		{"options", strings.Join(v.Options, ", ")},
		{"consensus", v.Consensus},
		{"quorum", strconv.Itoa(v.Quorum)},
		{"proposer", v.Proposer},
		{"status", v.Status},
		{"deadline", wireTime(v.Deadline.Time)},
	}
	if r := v.Result; r != nil {
		rows = append(rows, command.KV{"outcome", r.Outcome}, command.KV{"winner", r.Winner}, command.KV{"rule", r.Tally.Rule},
			command.KV{"ballots", fmt.Sprintf("%d of %d voters", r.Tally.Cast, r.Tally.Eligible)})
	}
	command.PrintKV(w, rows)
	if v.Result == nil {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPTION\tVOTES\tWEIGHT")
	for _, c := range v.Result.Tally.Counts {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", c.Option, c.Votes, weightText(c.Weight))
	}
	tw.Flush()
	for _, r := range v.Result.Tally.Rounds {
		var parts []string
		for _, c := range r.Counts {
			parts = append(parts, fmt.Sprintf("%s %d", c.Option, c.Votes))
		}
		line := fmt.Sprintf("round %d: %s", r.Round, strings.Join(parts, ", "))
		if r.Eliminated != "" {
			line += "; eliminated " + r.Eliminated
		}
		fmt.Fprintln(w, line)
	}
}
