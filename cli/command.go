package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/cli/admincmd"
	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/configcmd"
	"github.com/synapse-edge/synapse/cli/groupcmd"
	"github.com/synapse-edge/synapse/cli/hilcmd"
	"github.com/synapse-edge/synapse/cli/peercmd"
	"github.com/synapse-edge/synapse/cli/taskcmd"
	"github.com/synapse-edge/synapse/cli/tier1cmd"
	"github.com/synapse-edge/synapse/cli/updatecmd"
	"github.com/synapse-edge/synapse/tier1"
)

// commands returns the command table in the order of the main usage.
func commands() []*command.Command {
	return []*command.Command{
		{Name: "serve", Summary: "run the agent (HTTP API, task engine, store)"},
		{Name: "task", Summary: "submit, follow and manage tasks", Verbs: taskcmd.TaskVerbs()},
		{Name: "token", Summary: "manage API tokens (admin)", Verbs: admincmd.TokenVerbs()},
		{Name: "db", Summary: "check, back up, compact and count the writes of the database", Verbs: admincmd.DBVerbs(tier1.CheckRecords)},
		{Name: "config", Summary: "check a config file before serving on it; sign remote config", Verbs: configcmd.ConfigVerbs()},
		{Name: "tier1", Summary: "tier-1 routines: list, load-test ingest, export frames", Verbs: tier1cmd.Tier1Verbs()},
		{Name: "peer", Summary: "pair with other agents, accept their pair requests, list them", Verbs: peercmd.PeerVerbs()},
		leaf("identity", peercmd.IdentityVerb()),
		{Name: "outbox", Summary: "inspect and replay undelivered messages (admin)", Verbs: peercmd.OutboxVerbs()},
		{Name: "hil", Summary: "decisions waiting for a person: list, show, approve, reject, modify", Verbs: hilcmd.HILVerbs()},
		{Name: "group", Summary: "groups of agents: create, invite, join, leave, disband, send, tasks", Verbs: groupcmd.GroupVerbs()},
		{Name: "vote", Summary: "votes in a group: open, cast, show, list", Verbs: groupcmd.VoteVerbs()},
		leaf("capabilities", peercmd.CapabilitiesVerb()),
		{Name: "caps", Summary: "short for capabilities", Leaf: peercmd.CapabilitiesVerb()},
		{Name: "registry", Summary: "agents registered with this one: list, find by capability, remove", Verbs: peercmd.RegistryVerbs()},
		leaf("negotiate", peercmd.NegotiateVerb()),
		{Name: "contract", Summary: "protocol contracts with peers: list, show, revoke", Verbs: peercmd.ContractVerbs()},
		{Name: "cert", Summary: "the agent's TLS certificate: init writes a self-signed one", Verbs: certVerbs()},
		{Name: "audit", Summary: "the hash-chained audit log of security events: list, verify", Verbs: admincmd.AuditVerbs()},
		leaf("update", updatecmd.UpdateVerb(Version)),
		leaf("version", versionVerb()),
		{Name: "help", Summary: "show help for a command or verb"},
	}
}

// leaf is a command that is a single verb, with the verb's summary.
func leaf(name string, v *command.Verb) *command.Command {
	return &command.Command{Name: name, Summary: v.Summary, Leaf: v}
}

func findCommand(name string) *command.Command {
	for _, c := range commands() {
		if c.Name == name && c.Name != "help" {
			return c
		}
	}
	return nil
}

// printMainUsage writes the top-level usage.
func printMainUsage(w io.Writer, s *command.Session) {
	fmt.Fprint(w, `synapse: the Synapse edge agent and its command line

Usage:
  synapse [global flags] COMMAND [VERB] [flags] [args]

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		verbs := ""
		for i, v := range c.Verbs {
			if i == 0 {
				verbs = " ("
			} else {
				verbs += ", "
			}
			verbs += strings.TrimPrefix(v.Name, c.Name+" ")
		}
		if verbs != "" {
			verbs += ")"
		}
		fmt.Fprintf(tw, "  %s\t%s%s\n", c.Name, c.Summary, verbs)
	}
	tw.Flush()
	fmt.Fprint(w, "\nGlobal flags (also accepted after the verb):\n")
	fs := command.NewFlagSet("synapse")
	s.RegisterGlobals(fs, 0)
	fs.Bool("version", false, "print the version and exit")
	command.PrintFlags(w, fs)
	fmt.Fprint(w, `
Run 'synapse help COMMAND' or 'synapse COMMAND VERB --help' for details.

Examples:
  synapse serve --data ./data --listen 127.0.0.1:8080
  synapse task submit echo --payload '{"msg":"hi"}' --wait 10s
  synapse task watch TASK_ID
  synapse token create ci --scope tasks:read --scope tasks:write
`)
}
