// Package peercmd holds the synapse commands of the peer network: peer
// (pair, accept, list, remove), identity, outbox (undelivered messages),
// capabilities, registry, negotiate and contract.
package peercmd

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// PeerVerbs returns the verbs of synapse peer.
func PeerVerbs() []*command.Verb {
	return []*command.Verb{peerAddVerb(), peerListVerb(), peerRemoveVerb(), peerPendingVerb(), peerAcceptVerb(), peerDeclineVerb()}
}

func peerAddVerb() *command.Verb {
	return &command.Verb{
		Name: "peer add", Args: "ENDPOINT", MinArgs: 1, MaxArgs: 1,
		Summary: "pair with the agent at ENDPOINT and pin its key",
		About: `The agent fetches the identity of the agent at ENDPOINT (its base URL,
or mqtt:///AGENT_ID for an agent on the agent's MQTT broker) and pins its
public key: from then on it accepts messages from that agent only
when they are signed with that key. The key fingerprint printed is the
SHA-256 of that key in OpenSSH's form; when the network between the agents
is not trusted, check it against 'synapse identity' on the other agent.

Pairing asks the other agent too: it lists this one as a pending pair
request until an operator there accepts it ('synapse peer pending', then
'synapse peer accept AGENT_ID'), or pairs it with peer add. Until then it
refuses this agent's messages; they wait in the outbox and go once it has
accepted. Needs an admin token.

An https ENDPOINT is verified against the system roots and tls.peer_ca_file,
or, with --fingerprint, against that one certificate (the SHA-256 that
'synapse cert init' printed on the other agent), no CA needed. The peer
keeps the pin: a certificate changed under it is refused and logged, and
its messages wait in the outbox. Pairing again with the new fingerprint
re-pins it and they go. The agent this command talks to is then verified
with --cacert or --agent-fingerprint.`,
		Agent: true, Timeout: command.DefaultRequestTimeout, PeerPin: true,
		Examples: []string{
			"synapse peer add http://127.0.0.1:8081",
			"synapse peer add mqtt:///gw-7",
			"synapse --agent 127.0.0.1:8081 --data ./data-b peer add http://127.0.0.1:8080 --json",
			"synapse peer add https://10.0.0.7:8443 --fingerprint 5c1a992ca7b13a77234fc4b48be670a1c45e1f115016b611b72e1fa4c7146fd9",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			pin := pinFlag(fs)
			return func(ctx context.Context, args []string) error {
				endpoint, err := peerEndpoint(args[0])
				if err != nil {
					return err
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				p, err := s.Client().AddPeerWith(ctx, endpoint, client.PairOptions{TLSFingerprint: *pin})
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(p)
				}
				command.PrintKV(s.IO.Out, []command.KV{
					{"agent_id", p.AgentID},
					{"agent_name", p.AgentName},
					{"system_id", p.SystemID},
					{"endpoint", p.Endpoint},
					{"status", p.Status},
					{"key fingerprint", p.KeyFingerprint()},
					{"tls fingerprint", command.OrDash(p.TLSFingerprint)},
				})
				if me, err := s.Client().Identity(ctx); err == nil {
					fmt.Fprintf(s.IO.Out, "\n%s asks %s to pair back; there, an operator runs:\n  synapse peer accept %s\n",
						me.AgentID, p.AgentID, me.AgentID)
				}
				return nil
			}
		},
	}
}

// pinFlag defines --fingerprint, the TLS certificate of the peer to pin.
func pinFlag(fs *flag.FlagSet) *string {
	return fs.String("fingerprint", "", "SHA-256 `HEX` of the peer's TLS certificate to pin (printed by synapse cert init there)")
}

// peerEndpoint checks an agent's endpoint: its base URL (an address
// without a scheme gets http://), or mqtt:///AGENT_ID (mqtts://) for an
// agent on this agent's MQTT broker, which the agent checks further.
func peerEndpoint(arg string) (string, error) {
	e := strings.TrimSpace(arg)
	if !strings.Contains(e, "://") {
		e = "http://" + e
	}
	u, err := url.Parse(e)
	if err == nil && (u.Scheme == "mqtt" || u.Scheme == "mqtts") {
		if strings.Trim(u.Path, "/") == "" {
			return "", command.UsageErrorf("bad ENDPOINT %q: an agent on the MQTT broker is mqtt:///AGENT_ID", arg)
		}
		return strings.TrimRight(e, "/"), nil
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", command.UsageErrorf("bad ENDPOINT %q: want the agent's base URL, http://HOST:PORT, or mqtt:///AGENT_ID for an agent on the MQTT broker", arg)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func peerListVerb() *command.Verb {
	return &command.Verb{
		Name: "peer list", MaxArgs: 0,
		Summary: "list the paired agents and their status",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse peer list", "synapse peer list --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				peers, err := s.Client().ListPeers(ctx)
				if err != nil {
					return err
				}
				if peers == nil {
					peers = []client.Peer{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"agents": peers})
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "AGENT ID\tENDPOINT\tSTATUS\tLAST SEEN")
				for _, p := range peers {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.AgentID, p.Endpoint, command.OrDash(p.Status), command.OrDash(timeText(p.LastSeen)))
				}
				return tw.Flush()
			}
		},
	}
}

func peerRemoveVerb() *command.Verb {
	return &command.Verb{
		Name: "peer remove", Args: "AGENT_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "unpair an agent; its messages are refused from then on",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse peer remove edge-1_gateway_3fa9c2"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				if err := s.Client().RemovePeer(ctx, args[0]); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"agent_id": args[0], "removed": true})
				}
				fmt.Fprintf(s.IO.Out, "removed peer %s\n", args[0])
				return nil
			}
		},
	}
}

// timeText is a time as the agent sent it, with Go's zero time (never)
// as "".
func timeText(t string) string {
	if strings.HasPrefix(t, "0001-01-01") {
		return ""
	}
	return t
}
