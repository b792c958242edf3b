package peercmd

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/negotiate"
)

// negotiateTimeout covers a negotiation's four attempts of 30 s.
const negotiateTimeout = 150 * time.Second

// NegotiateVerb returns the negotiate command.
func NegotiateVerb() *command.Verb {
	return &command.Verb{
		Name: "negotiate", MaxArgs: 0,
		Summary: "negotiate a protocol contract with a paired agent",
		About: `The agent asks the peer for a contract: the highest communication tier both
serve, the first transport of the list both serve, and a security level at
least the one asked for (high between agents of different systems and for
--goal consult). Both agents keep the contract; later messages carry it. A
refusal names its TP-NEG code and, when the peer offers one, the downgrade
to ask for instead. Tiers: 1, 2, 3 or their full names; transports:
native_tp, rest_api. Needs an admin token.`,
		Agent: true, Timeout: negotiateTimeout,
		Examples: []string{
			"synapse negotiate --peer hospital_east_3fa9c2",
			"synapse negotiate --peer hospital_east_3fa9c2 --tiers 2,3 --security high --purpose claim_consultation",
			"synapse negotiate --peer gateway_b_9c01aa --tiers 1,3 --capability synapse.telemetry@1.0.0",
			"synapse negotiate --peer hospital_east_3fa9c2 --profile tp_secure",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			peer := fs.String("peer", "", "agent_id of the paired agent to negotiate with (required)")
			tiers := fs.String("tiers", "", "candidate tiers, comma separated (default: those the agent serves)")
			transports := fs.String("transports", "", "candidate transports in order of preference (default: native_tp,rest_api)")
			security := fs.String("security", "", "least security level: basic, standard or high (default basic)")
			goal := fs.String("goal", "", "goal type; consult requires high")
			purpose := fs.String("purpose", "", "session purpose (the task type of a tier-2 session)")
			profile := fs.String("profile", "", "protocol profile the peer must meet: tp_core, tp_secure or tp_full (refused with the TP-NEG code of what it lacks)")
			capability := fs.String("capability", "", "the tier-1 routine to agree on, `ID[@VERSION]` (its hash is read from this agent); adds tier 1 to the candidates")
			return func(ctx context.Context, args []string) error {
				if *peer == "" {
					return command.UsageErrorf("--peer is required")
				}
				req := client.NegotiateRequest{Peer: *peer}
				req.PreferredSecurityLevel = negotiate.SecurityLevel(*security)
				req.GoalType, req.SessionPurpose = *goal, *purpose
				if *security != "" && !req.PreferredSecurityLevel.Known() {
					return command.UsageErrorf("--security %q: want basic, standard or high", *security)
				}
				req.RequiredProfile = negotiate.Profile(*profile)
				if *profile != "" && !req.RequiredProfile.Known() {
					return command.UsageErrorf("--profile %q: want tp_core, tp_secure or tp_full", *profile)
				}
				for _, t := range splitList(*tiers) {
					tier, err := parseTier(t)
					if err != nil {
						return err
					}
					req.CandidateTiers = append(req.CandidateTiers, tier)
				}
				for _, p := range splitList(*transports) {
					req.CandidateTransports = append(req.CandidateTransports, negotiate.Transport{Protocol: p})
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				if *capability != "" {
					ref, err := capabilityRef(ctx, s, *capability)
					if err != nil {
						return err
					}
					req.Capability = ref
					if req.CandidateTiers != nil && !slices.Contains(req.CandidateTiers, negotiate.Tier1) {
						req.CandidateTiers = append([]negotiate.Tier{negotiate.Tier1}, req.CandidateTiers...)
					}
				}
				c, err := s.Client().Negotiate(ctx, req)
				if err != nil {
					return err
				}
				return printContract(s, c)
			}
		},
	}
}

// capabilityRef names a tier-1 routine of the agent, ID or ID@VERSION,
// with its descriptor hash.
func capabilityRef(ctx context.Context, s *command.Session, arg string) (*negotiate.CapabilityRef, error) {
	id, version, _ := strings.Cut(arg, "@")
	routines, err := s.Client().Tier1Routines(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range routines {
		if r.CapabilityID == id && (version == "" || r.Version == version) {
			return &negotiate.CapabilityRef{CapabilityID: r.CapabilityID, Version: r.Version, DescriptorHash: r.Hash}, nil
		}
		names = append(names, r.CapabilityID+"@"+r.Version)
	}
	return nil, command.UsageErrorf("--capability %q: this agent has no such tier-1 routine (it has %s)", arg, strings.Join(names, ", "))
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseTier accepts 1, 2, 3, tier1 … or a tier's full name.
func parseTier(s string) (negotiate.Tier, error) {
	switch strings.TrimPrefix(strings.ToLower(s), "tier") {
	case "1", "_1":
		return negotiate.Tier1, nil
	case "2", "_2":
		return negotiate.Tier2, nil
	case "3", "_3":
		return negotiate.Tier3, nil
	}
	if t := negotiate.Tier(s); t.Known() {
		return t, nil
	}
	return "", command.UsageErrorf("tier %q: want 1, 2, 3 or %v", s, negotiate.Tiers())
}

func printContract(s *command.Session, c *client.Contract) error {
	if s.Flags.JSON {
		return s.PrintJSON(c)
	}
	t := c.Contract
	rows := []command.KV{
		{"contract_id", t.ContractID},
		{"peer", c.Peer},
		{"role", c.Role},
		{"status", c.Status},
		{"tier", string(t.CommunicationTier)},
		{"transport", strings.TrimSpace(t.TransportMethod.Protocol + " " + t.TransportMethod.Endpoint)},
		{"security", string(t.SecurityLevel)},
		{"expires", t.ContractExpiration},
		{"revoked", strings.TrimSpace(c.RevokedAt + " " + c.RevokedBy)},
	}
	if t.Capability != nil {
		rows = append(rows, command.KV{"routine", t.Capability.CapabilityID + " " + t.Capability.Version})
	}
	if m := t.SessionMapping; m != nil {
		rows = append(rows, command.KV{"session", m.SessionTaskType + " → " + m.TaskType})
	}
	for _, st := range t.NegotiationTrace {
		if st.Note != "" {
			rows = append(rows, command.KV{"note", st.Note})
		}
	}
	command.PrintKV(s.IO.Out, rows)
	return nil
}

// ContractVerbs returns the verbs of synapse contract.
func ContractVerbs() []*command.Verb {
	return []*command.Verb{contractListVerb(), contractShowVerb(), contractRevokeVerb()}
}

func contractListVerb() *command.Verb {
	return &command.Verb{
		Name: "contract list", MaxArgs: 0,
		Summary: "list the protocol contracts this agent keeps",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse contract list", "synapse contract list --peer hospital_east_3fa9c2 --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			peer := fs.String("peer", "", "only the contracts with this agent, newest first")
			limit := fs.Int("limit", 100, "at most this many (1-1000)")
			return func(ctx context.Context, args []string) error {
				if *limit < 1 || *limit > 1000 {
					return command.UsageErrorf("--limit %d: want 1 to 1000", *limit)
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				page, err := s.Client().ListContracts(ctx, *peer, "", *limit)
				if err != nil {
					return err
				}
				if page.Contracts == nil {
					page.Contracts = []client.Contract{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(page)
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "CONTRACT ID\tPEER\tROLE\tTIER\tSECURITY\tSTATUS\tEXPIRES")
				for _, c := range page.Contracts {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Contract.ContractID, c.Peer, c.Role,
						c.Contract.CommunicationTier, c.Contract.SecurityLevel, c.Status, c.Contract.ContractExpiration)
				}
				return tw.Flush()
			}
		},
	}
}

func contractShowVerb() *command.Verb {
	return &command.Verb{
		Name: "contract show", Args: "CONTRACT_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "show one contract",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse contract show 01902c4f-1a2b-7000-8000-aaaa00000001 --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				c, err := s.Client().GetContract(ctx, args[0])
				if err != nil {
					return err
				}
				return printContract(s, c)
			}
		},
	}
}

func contractRevokeVerb() *command.Verb {
	return &command.Verb{
		Name: "contract revoke", Args: "CONTRACT_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "revoke a contract here and tell the peer",
		About: `Messages under a revoked contract are refused (TP-NEG012) by both agents;
negotiate again to talk under a new one. Needs an admin token.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse contract revoke 01902c4f-1a2b-7000-8000-aaaa00000001"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				c, err := s.Client().RevokeContract(ctx, args[0])
				if err != nil {
					return err
				}
				return printContract(s, c)
			}
		},
	}
}
