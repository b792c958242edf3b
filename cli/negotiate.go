package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/negotiate"
)

// negotiateTimeout covers a negotiation's four attempts of 30 s.
const negotiateTimeout = 150 * time.Second

// negotiateVerb is the negotiate command.
var negotiateVerb = &verb{
	name: "negotiate", maxArgs: 0,
	summary: "negotiate a protocol contract with a paired agent",
	about: `The agent asks the peer for a contract: the highest communication tier both
serve, the first transport of the list both serve, and a security level at
least the one asked for (high between agents of different systems and for
--goal consult). Both agents keep the contract; later messages carry it. A
refusal names its TP-NEG code and, when the peer offers one, the downgrade
to ask for instead. Tiers: 1, 2, 3 or their full names; transports:
native_tp, rest_api. Needs an admin token.`,
	agent: true, timeout: negotiateTimeout,
	examples: []string{
		"synapse negotiate --peer hospital_east_3fa9c2",
		"synapse negotiate --peer hospital_east_3fa9c2 --tiers 2,3 --security high --purpose claim_consultation",
		"synapse negotiate --peer gateway_b_9c01aa --tiers 1,3 --capability synapse.telemetry@1.0.0",
		"synapse negotiate --peer hospital_east_3fa9c2 --profile tp_secure",
	},
	setup: func(fs *flag.FlagSet, s *session) runFunc {
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
				return usageErrorf("--peer is required")
			}
			req := client.NegotiateRequest{Peer: *peer}
			req.PreferredSecurityLevel = negotiate.SecurityLevel(*security)
			req.GoalType, req.SessionPurpose = *goal, *purpose
			if *security != "" && !req.PreferredSecurityLevel.Known() {
				return usageErrorf("--security %q: want basic, standard or high", *security)
			}
			req.RequiredProfile = negotiate.Profile(*profile)
			if *profile != "" && !req.RequiredProfile.Known() {
				return usageErrorf("--profile %q: want tp_core, tp_secure or tp_full", *profile)
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
			ctx, cancel := s.withTimeout(ctx)
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
			c, err := s.client().Negotiate(ctx, req)
			if err != nil {
				return err
			}
			return printContract(s, c)
		}
	},
}

// capabilityRef names a tier-1 routine of the agent, ID or ID@VERSION,
// with its descriptor hash.
func capabilityRef(ctx context.Context, s *session, arg string) (*negotiate.CapabilityRef, error) {
	id, version, _ := strings.Cut(arg, "@")
	routines, err := s.client().Tier1Routines(ctx)
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
	return nil, usageErrorf("--capability %q: this agent has no such tier-1 routine (it has %s)", arg, strings.Join(names, ", "))
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
	return "", usageErrorf("tier %q: want 1, 2, 3 or %v", s, negotiate.Tiers())
}

func printContract(s *session, c *client.Contract) error {
	if s.g.json {
		return s.printJSON(c)
	}
	t := c.Contract
	rows := []kv{
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
		rows = append(rows, kv{"routine", t.Capability.CapabilityID + " " + t.Capability.Version})
	}
	if m := t.SessionMapping; m != nil {
		rows = append(rows, kv{"session", m.SessionTaskType + " → " + m.TaskType})
	}
	for _, st := range t.NegotiationTrace {
		if st.Note != "" {
			rows = append(rows, kv{"note", st.Note})
		}
	}
	printKV(s.io.Out, rows)
	return nil
}

func contractVerbs() []*verb {
	return []*verb{contractListVerb(), contractShowVerb(), contractRevokeVerb()}
}

func contractListVerb() *verb {
	return &verb{
		name: "contract list", maxArgs: 0,
		summary: "list the protocol contracts this agent keeps",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse contract list", "synapse contract list --peer hospital_east_3fa9c2 --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			peer := fs.String("peer", "", "only the contracts with this agent, newest first")
			limit := fs.Int("limit", 100, "at most this many (1-1000)")
			return func(ctx context.Context, args []string) error {
				if *limit < 1 || *limit > 1000 {
					return usageErrorf("--limit %d: want 1 to 1000", *limit)
				}
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				page, err := s.client().ListContracts(ctx, *peer, "", *limit)
				if err != nil {
					return err
				}
				if page.Contracts == nil {
					page.Contracts = []client.Contract{}
				}
				if s.g.json {
					return s.printJSON(page)
				}
				tw := tabwriter.NewWriter(s.io.Out, 0, 0, 2, ' ', 0)
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

func contractShowVerb() *verb {
	return &verb{
		name: "contract show", args: "CONTRACT_ID", minArgs: 1, maxArgs: 1,
		summary: "show one contract",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse contract show 01902c4f-1a2b-7000-8000-aaaa00000001 --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				c, err := s.client().GetContract(ctx, args[0])
				if err != nil {
					return err
				}
				return printContract(s, c)
			}
		},
	}
}

func contractRevokeVerb() *verb {
	return &verb{
		name: "contract revoke", args: "CONTRACT_ID", minArgs: 1, maxArgs: 1,
		summary: "revoke a contract here and tell the peer",
		about: `Messages under a revoked contract are refused (TP-NEG012) by both agents;
negotiate again to talk under a new one. Needs an admin token.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{"synapse contract revoke 01902c4f-1a2b-7000-8000-aaaa00000001"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				c, err := s.client().RevokeContract(ctx, args[0])
				if err != nil {
					return err
				}
				return printContract(s, c)
			}
		},
	}
}
