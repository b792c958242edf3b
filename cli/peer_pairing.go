package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/client"
)

// Pair requests: agents that paired this one and wait for an operator.

func peerPendingVerb() *verb {
	return &verb{
		name: "peer pending", maxArgs: 0,
		summary: "list the agents that ask to pair with this one",
		about: `An agent that pairs this one ('synapse peer add' there) asks to be paired
back: its request waits here, and its messages are refused as retriable,
until an operator accepts it (synapse peer accept AGENT_ID) or declines it
(synapse peer decline AGENT_ID). Compare the key fingerprint with the one
'synapse identity' prints on that agent before accepting. Needs an admin
token.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse peer pending",
			"synapse --agent 127.0.0.1:8081 --data ./data-b peer pending --json",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				reqs, err := s.client().ListPairRequests(ctx)
				if err != nil {
					return err
				}
				if reqs == nil {
					reqs = []client.PairRequest{}
				}
				if s.g.json {
					return s.printJSON(map[string]any{"pending": reqs})
				}
				if len(reqs) == 0 {
					fmt.Fprintln(s.io.Out, "no pending pair requests")
					return nil
				}
				tw := tabwriter.NewWriter(s.io.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "AGENT ID\tENDPOINT\tKEY FINGERPRINT\tSINCE")
				for _, r := range reqs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.AgentID, r.Endpoint, r.KeyFingerprint(), orDash(r.FirstSeen))
				}
				return tw.Flush()
			}
		},
	}
}

func peerAcceptVerb() *verb {
	return &verb{
		name: "peer accept", args: "AGENT_ID", minArgs: 1, maxArgs: 1,
		summary: "accept an agent's pair request and pin its key",
		about: `The agent reads the identity of the requesting agent at the endpoint its
request named, checks that it names the key the request was signed with,
and pins it, as peer add does. The messages the other agent queued for
this one are delivered at once. Needs an admin token.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse peer accept edge-1_gateway_3fa9c2",
			"synapse --agent 127.0.0.1:8081 --data ./data-b peer accept edge-1_gateway_3fa9c2",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				p, err := s.client().AcceptPeer(ctx, args[0])
				if err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(p)
				}
				printKV(s.io.Out, []kv{
					{"agent_id", p.AgentID},
					{"endpoint", p.Endpoint},
					{"status", p.Status},
					{"key fingerprint", p.KeyFingerprint()},
				})
				return nil
			}
		},
	}
}

func peerDeclineVerb() *verb {
	return &verb{
		name: "peer decline", args: "AGENT_ID", minArgs: 1, maxArgs: 1,
		summary: "forget an agent's pair request",
		about: `The request is dropped; the other agent keeps asking (its outbox retries)
and shows up again in peer pending. Needs an admin token.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{"synapse peer decline edge-1_gateway_3fa9c2"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				if err := s.client().DeclinePeer(ctx, args[0]); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(map[string]any{"agent_id": args[0], "declined": true})
				}
				fmt.Fprintf(s.io.Out, "declined the pair request of %s\n", args[0])
				return nil
			}
		},
	}
}

// identityVerb prints the agent's public identity.
var identityVerb = &verb{
	name: "identity", maxArgs: 0,
	summary: "print the agent's id, endpoint and key fingerprint",
	about: `Reads GET /identity (no token needed). --id prints the agent_id alone, for
scripts: A=$(synapse identity --id).`,
	agent: true, timeout: defaultRequestTimeout,
	examples: []string{
		"synapse identity",
		"synapse --agent 127.0.0.1:8081 identity --id",
	},
	setup: func(fs *flag.FlagSet, s *session) runFunc {
		idOnly := fs.Bool("id", false, "print the agent_id only")
		return func(ctx context.Context, args []string) error {
			ctx, cancel := s.withTimeout(ctx)
			defer cancel()
			id, err := s.client().Identity(ctx)
			if err != nil {
				return err
			}
			switch {
			case *idOnly:
				fmt.Fprintln(s.io.Out, id.AgentID)
				return nil
			case s.g.json:
				return s.printJSON(id)
			}
			printKV(s.io.Out, []kv{
				{"agent_id", id.AgentID},
				{"agent_name", id.AgentName},
				{"system_id", id.SystemID},
				{"endpoint", id.Endpoint},
				{"key fingerprint", client.KeyFingerprint(id.PublicKey)},
				{"protocol_version", id.ProtocolVersion},
			})
			return nil
		}
	},
}
