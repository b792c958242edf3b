package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/client"
)

// capabilitiesVerb is the capabilities command (seed 000).
var capabilitiesVerb = &verb{
	name: "capabilities", maxArgs: 0,
	summary: "show what the agent declares: task types, limits, interfaces, compliance",
	about: `Without flags: the agent's capabilities (identity, task types, content types,
transport modes, limits, features). --interfaces lists the standard
interfaces it implements. --compliance evaluates the agent against the 18
standard interfaces (8 basic ones are required); with --agent-id, one of its
paired peers instead (the agent fetches the peer's interface list). Both
flags print both (with --json: {"interfaces":[...],"compliance":{...}}).`,
	agent: true, timeout: defaultRequestTimeout,
	examples: []string{
		"synapse capabilities",
		"synapse capabilities --interfaces",
		"synapse capabilities --compliance",
		"synapse caps --interfaces --compliance",
		"synapse capabilities --agent-id edge-2_gateway_91c0aa --compliance --json",
	},
	setup: func(fs *flag.FlagSet, s *session) runFunc {
		ifaces := fs.Bool("interfaces", false, "list the standard interfaces implemented")
		compliance := fs.Bool("compliance", false, "evaluate compliance with the standard interfaces")
		agentID := fs.String("agent-id", "", "with --compliance: evaluate this paired peer (`ID`; default the agent itself)")
		fs.StringVar(agentID, "peer", "", "same as --agent-id")
		return func(ctx context.Context, args []string) error {
			if *agentID != "" && !*compliance {
				return usageErrorf("--agent-id goes with --compliance")
			}
			ctx, cancel := s.withTimeout(ctx)
			defer cancel()
			c := s.client()
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
				if s.g.json {
					return s.printJSON(map[string]any{"interfaces": l.Interfaces, "compliance": ev})
				}
				if err := printInterfaces(s.io.Out, l.Interfaces); err != nil {
					return err
				}
				fmt.Fprintln(s.io.Out)
				printCompliance(s.io.Out, ev)
			case *compliance:
				id := *agentID
				if id == "" {
					id = "self"
				}
				ev, err := c.Compliance(ctx, id)
				if err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(ev)
				}
				printCompliance(s.io.Out, ev)
			case *ifaces:
				l, err := c.Interfaces(ctx)
				if err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(l)
				}
				return printInterfaces(s.io.Out, l.Interfaces)
			default:
				caps, err := c.Capabilities(ctx)
				if err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(caps)
				}
				return printCapabilities(s.io.Out, caps)
			}
			return nil
		}
	},
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func printCapabilities(w io.Writer, c *client.Capabilities) error {
	printKV(w, []kv{
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Type, orDash(t.Name), orDash(t.EstimatedTime),
			orDash(strings.Join(t.Capabilities, ",")), schema)
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
	printKV(w, []kv{
		{"agent_id", ev.AgentID},
		{"compliant", yesNo(ev.Compliant)},
		{"basic", fmt.Sprintf("%d/%d", ev.BasicImplemented, ev.BasicRequired)},
		{"complete", fmt.Sprintf("%d/%d", ev.CompleteImplemented, ev.CompleteTotal)},
		{"advanced", fmt.Sprintf("%d/%d", ev.AdvancedImplemented, ev.AdvancedTotal)},
		{"missing basics", strings.Join(ev.MissingBasics, ", ")},
	})
}

func registryVerbs() []*verb {
	return []*verb{registryListVerb(), registryFindVerb(), registryRemoveVerb()}
}

func registryListVerb() *verb {
	return &verb{
		name: "registry list", maxArgs: 0,
		summary: "list the agents registered with this agent (acting as a registry)",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse registry list", "synapse --agent 10.0.0.2:8080 registry list --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				list, err := s.client().Directory(ctx, client.DirectoryQuery{})
				if err != nil {
					return err
				}
				return s.printDirectory(list)
			}
		},
	}
}

func registryFindVerb() *verb {
	return &verb{
		name: "registry find", maxArgs: 0,
		summary: "find registered agents by capability, task type and status",
		about: `--capability matches a task type that lists the capability, or is of that
type; --task-type matches the type; given both, one task type must match
both. --status is online, busy or offline. With an mqtt section, the agent
also lists the agents whose presence cards are on its broker (SOURCE mqtt).`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse registry find --task-type echo",
			"synapse registry find --capability imaging --status online --json",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			var q client.DirectoryQuery
			fs.StringVar(&q.Capability, "capability", "", "a capability (`NAME`)")
			fs.StringVar(&q.TaskType, "task-type", "", "a task `TYPE`")
			fs.StringVar(&q.Status, "status", "", "online, busy or offline")
			return func(ctx context.Context, args []string) error {
				if q == (client.DirectoryQuery{}) {
					return usageErrorf("give --capability, --task-type or --status (registry list lists them all)")
				}
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				list, err := s.client().FindAgents(ctx, q)
				if err != nil {
					return err
				}
				return s.printDirectory(list)
			}
		},
	}
}

func registryRemoveVerb() *verb {
	return &verb{
		name: "registry remove", args: "AGENT_ID", minArgs: 1, maxArgs: 1,
		summary: "forget a registered agent and the key pinned for it (admin)",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse registry remove edge-1_gateway_3fa9c2"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				if err := s.client().Unregister(ctx, args[0]); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(map[string]any{"agent_id": args[0], "removed": true})
				}
				fmt.Fprintf(s.io.Out, "removed %s from the directory\n", args[0])
				return nil
			}
		},
	}
}

// printDirectory writes registered agents as a table, or JSON.
func (s *session) printDirectory(list []client.DirectoryEntry) error {
	if list == nil {
		list = []client.DirectoryEntry{}
	}
	if s.g.json {
		return s.printJSON(map[string]any{"agents": list})
	}
	tw := tabwriter.NewWriter(s.io.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT ID\tSTATUS\tENDPOINT\tTASK TYPES\tCOMPLIANT\tLAST SEEN\tSOURCE")
	for _, e := range list {
		var types []string
		if e.Capabilities != nil {
			for _, t := range e.Capabilities.SupportedTaskTypes {
				types = append(types, t.Type)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.AgentID, orDash(e.Status), e.Endpoint,
			orDash(strings.Join(types, ",")), yesNo(e.Compliance.Compliant), orDash(timeText(e.LastSeen)), orDash(e.Source))
	}
	return tw.Flush()
}
