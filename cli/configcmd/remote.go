package configcmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
)

// The operator's side of remote configuration (README: Remote
// configuration): an operator key, and desired documents signed with it.

func keygenVerb() *command.Verb {
	return &command.Verb{
		Name: "config keygen", Summary: "make an operator key that signs remote config documents",
		About: `Writes a new Ed25519 operator key to the file given by --out (PKCS #8 PEM,
mode 0600; an existing file is never overwritten) and prints its public key,
which goes into the agents' config files, in remote_config.operator_keys.
Keep the key file off the agents: whoever has it can configure them.`,
		Examples: []string{"synapse config keygen --out operator.key"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			out := fs.String("out", "", "`FILE` to write the operator key to (required)")
			return func(_ context.Context, _ []string) error {
				if *out == "" {
					fmt.Fprintln(s.IO.Err, "synapse config keygen: --out FILE is required")
					return command.ErrUsage
				}
				pub, err := desired.GenerateKey(*out)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.IO.Out, "%s\n", pub)
				fmt.Fprintf(s.IO.Err, "operator key written to %s; put its public key (above) in remote_config.operator_keys\n", *out)
				return nil
			}
		},
	}
}

func signVerb() *command.Verb {
	return &command.Verb{
		Name: "config sign", Args: "FRAGMENT.json", MinArgs: 1, MaxArgs: 1,
		Summary: "sign a config fragment for an agent: prints the desired document",
		About: `Reads FRAGMENT.json (a JSON object of config file keys: "-" reads standard
input), and prints the desired document for the agent --agent-id at --version,
signed with the operator key --key. Publish it retained, at QoS 1, on
{prefix}/agents/AGENT_ID/config/desired, e.g.

  synapse config sign --key operator.key --agent-id gw-7 --version 3 frag.json > doc.json
  mosquitto_pub -h broker -q 1 -r -t synapse/agents/gw-7/config/desired -f doc.json

The version must be greater than the last one the agent applied; the
agent answers on synapse/agents/gw-7/config/reported.`,
		Examples: []string{"synapse config sign --key operator.key --agent-id gw-7 --version 3 frag.json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			key := fs.String("key", "", "operator key `FILE` (synapse config keygen; required)")
			agentID := fs.String("agent-id", "", "the agent_id of the agent the document is for (required)")
			version := fs.Uint64("version", 0, "the document's version `N` (1 or more; required)")
			return func(_ context.Context, args []string) error {
				if *key == "" || *agentID == "" || *version == 0 {
					fmt.Fprintln(s.IO.Err, "synapse config sign: --key FILE, --agent-id ID and --version N are required")
					return command.ErrUsage
				}
				priv, err := desired.ReadKey(*key)
				if err != nil {
					return err
				}
				var frag []byte
				if args[0] == "-" {
					frag, err = io.ReadAll(io.LimitReader(s.IO.In, desired.MaxDocument+1))
				} else {
					frag, err = os.ReadFile(args[0])
				}
				if err != nil {
					return fmt.Errorf("config fragment: %w", err)
				}
				doc, err := desired.Sign(priv, *agentID, *version, frag)
				if err != nil {
					return err
				}
				fmt.Fprintf(s.IO.Out, "%s\n", doc)
				return nil
			}
		},
	}
}
