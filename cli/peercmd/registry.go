package peercmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// CapabilitiesVerb returns the capabilities command (seed 000).
func CapabilitiesVerb() *command.Verb {
	return &command.Verb{
		Name: "capabilities", MaxArgs: 0,
		Summary: "show what the agent declares: task types, limits, interfaces, compliance",
		About: `Without flags: the agent's capabilities (identity, task types, content types,
transport modes, limits, features). --interfaces lists the standard
interfaces it implements. --compliance evaluates the agent against the 18
standard interfaces (8 basic ones are required); with --agent-id, one of its
paired peers instead (the agent fetches the peer's interface list). Both
flags print both (with --json: {"interfaces":[...],"compliance":{...}}).`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse capabilities",
			"synapse capabilities --interfaces",
			"synapse capabilities --compliance",
			"synapse caps --interfaces --compliance",
			"synapse capabilities --agent-id edge-2_gateway_91c0aa --compliance --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			ifaces := fs.Bool("interfaces", false, "list the standard interfaces implemented")
			compliance := fs.Bool("compliance", false, "evaluate compliance with the standard interfaces")
			agentID := fs.String("agent-id", "", "with --compliance: evaluate this paired peer (`ID`; default the agent itself)")
			fs.StringVar(agentID, "peer", "", "same as --agent-id")
			return func(ctx context.Context, args []string) error {
				if *agentID != "" && !*compliance {
					return command.UsageErrorf("--agent-id goes with --compliance")
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				c := s.Client()
				switch {
				case *ifaces && *compliance:
					id := *agentID
					if id == "" {
						id = "self"
					}
					l, err := c.Interfaces(ctx)
					if err != nil {
						return err
					}
					ev, err := c.Compliance(ctx, id)
					if err != nil {
						return err
					}
					if s.Flags.JSON {
						return s.PrintJSON(map[string]any{"interfaces": l.Interfaces, "compliance": ev})
					}
					if err := printInterfaces(s.IO.Out, l.Interfaces); err != nil {
						return err
					}
					fmt.Fprintln(s.IO.Out)
					printCompliance(s.IO.Out, ev)
				case *compliance:
					id := *agentID
					if id == "" {
						id = "self"
					}
					ev, err := c.Compliance(ctx, id)
					if err != nil {
						return err
					}
					if s.Flags.JSON {
						return s.PrintJSON(ev)
					}
					printCompliance(s.IO.Out, ev)
				case *ifaces:
					l, err := c.Interfaces(ctx)
					if err != nil {
						return err
					}
					if s.Flags.JSON {
						return s.PrintJSON(l)
					}
					return printInterfaces(s.IO.Out, l.Interfaces)
				default:
					caps, err := c.Capabilities(ctx)
					if err != nil {
						return err
					}
					if s.Flags.JSON {
						return s.PrintJSON(caps)
					}
					return printCapabilities(s.IO.Out, caps)
				}
				return nil
			}
		},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func printCapabilities(w io.Writer, c *client.Capabilities) error {
	command.PrintKV(w, []command.KV{
		{"agent_id", c.AgentID},
		{"agent_name", c.AgentName},
		{"system_id", c.SystemID},
		{"protocol_version", c.ProtocolVersion},
		{"content types", strings.Join(c.SupportedContentTypes, ", ")},
		{"transport modes", strings.Join(c.SupportedTransportModes, ", ")},
		{"max concurrent tasks", strconv.Itoa(c.MaxConcurrentTasks)},
		{"max task duration", strconv.Itoa(c.MaxTaskDurationSeconds) + " s"},
		{"max file size", strconv.FormatInt(c.MaxFileSize, 10) + " bytes"},
		{"progress updates", yesNo(c.SupportProgressUpdates)},
		{"streaming", yesNo(c.SupportStreaming)},
		{"human in the loop", yesNo(c.SupportHiL)},
		{"groups", yesNo(c.SupportGroups)},
	})
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK TYPE\tNAME\tESTIMATED\tCAPABILITIES\tINPUT SCHEMA")
	for _, t := range c.SupportedTaskTypes {
		schema := "-"
		if t.InputSchema != "" {
			schema = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Type, command.OrDash(t.Name), command.OrDash(t.EstimatedTime),
			command.OrDash(strings.Join(t.Capabilities, ",")), schema)
	}
	return tw.Flush()
}

func printInterfaces(w io.Writer, list []client.Interface) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INTERFACE\tCATEGORY\tLEVEL\tVERSION")
	for _, i := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", i.Name, i.Category, i.ComplianceLevel, i.Version)
	}
	return tw.Flush()
}

func printCompliance(w io.Writer, ev *client.Compliance) {
	command.PrintKV(w, []command.KV{
		{"agent_id", ev.AgentID},
		{"compliant", yesNo(ev.Compliant)},
		{"basic", fmt.Sprintf("%d/%d", ev.BasicImplemented, ev.BasicRequired)},
		{"complete", fmt.Sprintf("%d/%d", ev.CompleteImplemented, ev.CompleteTotal)},
		{"advanced", fmt.Sprintf("%d/%d", ev.AdvancedImplemented, ev.AdvancedTotal)},
		{"missing basics", strings.Join(ev.MissingBasics, ", ")},
	})
}

// RegistryVerbs returns the verbs of synapse registry.
func RegistryVerbs() []*command.Verb {
	return []*command.Verb{registryListVerb(), registryFindVerb(), registryRemoveVerb()}
}

func registryListVerb() *command.Verb {
	return &command.Verb{
		Name: "registry list", MaxArgs: 0,
		Summary: "list the agents registered with this agent (acting as a registry)",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse registry list", "synapse --agent 10.0.0.2:8080 registry list --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				list, err := s.Client().Directory(ctx, client.DirectoryQuery{})
				if err != nil {
					return err
				}
				return printDirectory(s, list)
			}
		},
	}
}

func registryFindVerb() *command.Verb {
	return &command.Verb{
		Name: "registry find", MaxArgs: 0,
		Summary: "find registered agents by capability, task type and status",
		About: `--capability matches a task type that lists the capability, or is of that
type; --task-type matches the type; given both, one task type must match
both. --status is online, busy or offline. With an mqtt section, the agent
also lists the agents whose presence cards are on its broker (SOURCE mqtt).`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse registry find --task-type echo",
			"synapse registry find --capability imaging --status online --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			var q client.DirectoryQuery
			fs.StringVar(&q.Capability, "capability", "", "a capability (`NAME`)")
			fs.StringVar(&q.TaskType, "task-type", "", "a task `TYPE`")
			fs.StringVar(&q.Status, "status", "", "online, busy or offline")
			return func(ctx context.Context, args []string) error {
				if q == (client.DirectoryQuery{}) {
					return command.UsageErrorf("give --capability, --task-type or --status (registry list lists them all)")
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				list, err := s.Client().FindAgents(ctx, q)
				if err != nil {
					return err
				}
				return printDirectory(s, list)
			}
		},
	}
}

func registryRemoveVerb() *command.Verb {
	return &command.Verb{
		Name: "registry remove", Args: "AGENT_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "forget a registered agent and the key pinned for it (admin)",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse registry remove edge-1_gateway_3fa9c2"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				if err := s.Client().Unregister(ctx, args[0]); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"agent_id": args[0], "removed": true})
				}
				fmt.Fprintf(s.IO.Out, "removed %s from the directory\n", args[0])
				return nil
			}
		},
	}
}

// printDirectory writes registered agents as a table, or JSON.
func printDirectory(s *command.Session, list []client.DirectoryEntry) error {
	if list == nil {
		list = []client.DirectoryEntry{}
	}
	if s.Flags.JSON {
		return s.PrintJSON(map[string]any{"agents": list})
	}
	tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT ID\tSTATUS\tENDPOINT\tTASK TYPES\tCOMPLIANT\tLAST SEEN\tSOURCE")
	for _, e := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.AgentID, command.OrDash(e.Status), e.Endpoint,
			command.OrDash(strings.Join(e.Capabilities, ",")), yesNo(e.Compliance.Compliant), command.OrDash(timeText(e.LastSeen)), command.OrDash(e.Source))
	}
	return tw.Flush()
}
