package peercmd

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// Pair requests: agents that paired this one and wait for an operator.

func peerPendingVerb() *command.Verb {
	return &command.Verb{
		Name: "peer pending", MaxArgs: 0,
		Summary: "list the agents that ask to pair with this one",
		About: `An agent that pairs this one ('synapse peer add' there) asks to be paired
back: its request waits here, and its messages are refused as retriable,
until an operator accepts it (synapse peer accept AGENT_ID) or declines it
(synapse peer decline AGENT_ID). Compare the key fingerprint with the one
'synapse identity' prints on that agent before accepting. Needs an admin
token.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse peer pending",
			"synapse --agent 127.0.0.1:8081 --data ./data-b peer pending --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				reqs, err := s.Client().ListPairRequests(ctx)
				if err != nil {
					return err
				}
				if reqs == nil {
					reqs = []client.PairRequest{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"pending": reqs})
				}
				if len(reqs) == 0 {
					fmt.Fprintln(s.IO.Out, "no pending pair requests")
					return nil
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "AGENT ID\tENDPOINT\tKEY FINGERPRINT\tSINCE")
				for _, r := range reqs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.AgentID, r.Endpoint, r.KeyFingerprint(), command.OrDash(r.FirstSeen))
				}
				return tw.Flush()
			}
		},
	}
}

func peerAcceptVerb() *command.Verb {
	return &command.Verb{
		Name: "peer accept", Args: "AGENT_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "accept an agent's pair request and pin its key",
		About: `The agent reads the identity of the requesting agent at the endpoint its
request named, checks that it names the key the request was signed with,
and pins it, as peer add does. The messages the other agent queued for
this one are delivered at once. With --fingerprint, the requester's https
endpoint is verified against that certificate only, as in peer add.
Needs an admin token.`,
		Agent: true, Timeout: command.DefaultRequestTimeout, PeerPin: true,
		Examples: []string{
			"synapse peer accept edge-1_gateway_3fa9c2",
			"synapse --agent 127.0.0.1:8081 --data ./data-b peer accept edge-1_gateway_3fa9c2",
			"synapse peer accept edge-1_gateway_3fa9c2 --fingerprint 6b2f632b6c833e78eab3899954d66d382a3127602857a6fcd8c9d225914717c7",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			pin := pinFlag(fs)
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				p, err := s.Client().AcceptPeerWith(ctx, args[0], client.PairOptions{TLSFingerprint: *pin})
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(p)
				}
				command.PrintKV(s.IO.Out, []command.KV{
					{"agent_id", p.AgentID},
					{"endpoint", p.Endpoint},
					{"status", p.Status},
					{"key fingerprint", p.KeyFingerprint()},
					{"tls fingerprint", command.OrDash(p.TLSFingerprint)},
				})
				return nil
			}
		},
	}
}

func peerDeclineVerb() *command.Verb {
	return &command.Verb{
		Name: "peer decline", Args: "AGENT_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "forget an agent's pair request",
		About: `The request is dropped; the other agent keeps asking (its outbox retries)
and shows up again in peer pending. Needs an admin token.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse peer decline edge-1_gateway_3fa9c2"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				if err := s.Client().DeclinePeer(ctx, args[0]); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"agent_id": args[0], "declined": true})
				}
				fmt.Fprintf(s.IO.Out, "declined the pair request of %s\n", args[0])
				return nil
			}
		},
	}
}

// IdentityVerb returns the identity command, which prints the agent's public
// identity.
func IdentityVerb() *command.Verb {
	return &command.Verb{
		Name: "identity", MaxArgs: 0,
		Summary: "print the agent's id, endpoint and key fingerprint",
		About: `Reads GET /identity (no token needed). --id prints the agent_id alone, for
scripts: A=$(synapse identity --id).`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse identity",
			"synapse --agent 127.0.0.1:8081 identity --id",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			idOnly := fs.Bool("id", false, "print the agent_id only")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				id, err := s.Client().Identity(ctx)
				if err != nil {
					return err
				}
				switch {
				case *idOnly:
					fmt.Fprintln(s.IO.Out, id.AgentID)
					return nil
				case s.Flags.JSON:
					return s.PrintJSON(id)
				}
				command.PrintKV(s.IO.Out, []command.KV{
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
}
