// Package groupcmd holds the synapse group and vote commands: groups of
// agents (create, invite, join, leave, disband, messages, group tasks) and
// the votes in them, through the agent's group routes.
package groupcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/group"
)

// GroupVerbs returns the verbs of synapse group.
func GroupVerbs() []*command.Verb {
	return []*command.Verb{groupCreateVerb(), groupListVerb(), groupShowVerb(), groupInviteVerb(), groupJoinVerb(),
		groupLeaveVerb(), groupDisbandVerb(), groupSendVerb(), groupMessagesVerb(), groupTaskVerb(), groupResultVerb()}
}

// groupRoute is /group/{id} plus more path segments, each escaped.
func groupRoute(id string, more ...string) string {
	r := "/group/" + url.PathEscape(id)
	for _, m := range more {
		r += "/" + url.PathEscape(m)
	}
	return r
}

// sentNote says what a 202 (accepted) means.
func sentNote(s *command.Session, accepted bool, what string) {
	if accepted && !s.Flags.JSON {
		fmt.Fprintf(s.IO.Err, "%s sent to the group's owner; the outcome arrives as an announcement\n", what)
	}
}

func printGroup(w io.Writer, g *group.Group) {
	command.PrintKV(w, []command.KV{
		{"group_id", g.GroupID},
		{"name", g.Name},
		{"description", g.Description},
		{"owner", g.Owner},
		{"status", g.Status},
		{"standing", g.Standing},
		{"version", strconv.FormatUint(g.Version, 10)},
		{"created_at", wireTime(g.CreatedAt.Time)},
	})
	printMembers(w, g.Members)
	if len(g.Invitations) > 0 {
		fmt.Fprintln(w, "invitations:")
		for _, inv := range g.Invitations {
			fmt.Fprintf(w, "  %s (%s, weight %s, by %s)\n", inv.AgentID, inv.Role, weightText(inv.Weight), inv.InvitedBy)
		}
	}
}

func printMembers(w io.Writer, ms []group.Member) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT ID\tROLE\tWEIGHT\tJOINED")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.AgentID, m.Role, weightText(m.Weight), wireTime(m.JoinedAt.Time))
	}
	tw.Flush()
}

func weightText(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

func wireTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func groupCreateVerb() *command.Verb {
	return &command.Verb{
		Name: "group create", Args: "NAME", MinArgs: 1, MaxArgs: 1,
		Summary: "create a group owned by this agent",
		About: `The agent becomes the group's owner and coordinates it. Each --member (a
paired peer) is invited; it joins with 'synapse group join' on its own agent.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			`synapse group create line-3 --description "the agents of line 3"`,
			"synapse group create line-3 --member edge_plc1_a1b2c3 --member edge_cam2_d4e5f6",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			desc := fs.String("description", "", "what the group is for")
			var members command.List
			fs.Var(&members, "member", "invite `AGENT_ID` (repeatable, or comma-separated)")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var g group.Group
				req := group.CreateRequest{Name: args[0], Description: *desc, InitialMembers: members}
				if _, err := s.Post(ctx, "/group", nil, req, &g); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(&g)
				}
				printGroup(s.IO.Out, &g)
				return nil
			}
		},
	}
}

func groupListVerb() *command.Verb {
	return &command.Verb{
		Name: "group list", MaxArgs: 0,
		Summary: "list the groups this agent owns, belongs to or is invited to",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse group list", "synapse group list --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var out struct {
					Groups []group.Group `json:"groups"`
				}
				if err := s.Get(ctx, "/groups", nil, &out); err != nil {
					return err
				}
				if s.Flags.JSON {
					if out.Groups == nil {
						out.Groups = []group.Group{}
					}
					return s.PrintJSON(out)
				}
				if len(out.Groups) == 0 {
					fmt.Fprintln(s.IO.Err, "no groups")
					return nil
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP ID\tNAME\tOWNER\tSTATUS\tSTANDING\tMEMBERS")
				for _, g := range out.Groups {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", g.GroupID, g.Name, g.Owner, g.Status, g.Standing, len(g.Members))
				}
				return tw.Flush()
			}
		},
	}
}

func groupShowVerb() *command.Verb {
	return &command.Verb{
		Name: "group show", Args: "GROUP_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "show a group and its members",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse group show 0190c3e2-7b1a-7c44-9a51-2f0e8d6b4a10"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var g group.Group
				if err := s.Get(ctx, groupRoute(args[0]), nil, &g); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(&g)
				}
				printGroup(s.IO.Out, &g)
				return nil
			}
		},
	}
}

func groupInviteVerb() *command.Verb {
	return &command.Verb{
		Name: "group invite", Args: "GROUP_ID AGENT_ID", MinArgs: 2, MaxArgs: 2,
		Summary: "invite a paired agent into a group (owner or admin)",
		About: `AGENT_ID must be a paired peer of the group's owner. Its weight counts in
weighted votes. On an admin's agent the invitation is sent to the owner's
agent, which makes it.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse group invite GROUP_ID edge_plc1_a1b2c3",
			"synapse group invite GROUP_ID edge_cam2_d4e5f6 --role admin --weight 2",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			role := fs.String("role", "member", "member or admin")
			weight := fs.Float64("weight", 1, "weight in weighted votes")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var g group.Group
				req := group.InviteRequest{AgentID: args[1], Role: group.Role(*role), Weight: *weight}
				accepted, err := s.Post(ctx, groupRoute(args[0], "invite"), nil, req, &g)
				if err != nil {
					return err
				}
				sentNote(s, accepted, "the invitation was")
				if s.Flags.JSON {
					return s.PrintJSON(&g)
				}
				fmt.Fprintf(s.IO.Out, "invited %s to %s\n", args[1], args[0])
				return nil
			}
		},
	}
}

// groupChangeVerb is join, leave or disband.
func groupChangeVerb(name, summary, about string, flags func(fs *flag.FlagSet) func() any) *command.Verb {
	return &command.Verb{
		Name: "group " + name, Args: "GROUP_ID", MinArgs: 1, MaxArgs: 1,
		Summary: summary, About: about,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse group " + name + " GROUP_ID"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			body := func() any { return nil }
			if flags != nil {
				body = flags(fs)
			}
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var g group.Group
				accepted, err := s.Post(ctx, groupRoute(args[0], name), nil, body(), &g)
				if err != nil {
					return err
				}
				sentNote(s, accepted, "the request was")
				if s.Flags.JSON {
					return s.PrintJSON(&g)
				}
				command.PrintKV(s.IO.Out, []command.KV{{"group_id", g.GroupID}, {"status", g.Status}, {"standing", g.Standing}})
				return nil
			}
		},
	}
}

func groupJoinVerb() *command.Verb {
	return groupChangeVerb("join", "accept this agent's invitation to a group",
		`The join goes to the group's owner, which adds the member and tells every
member; the standing is "joining" until then.`, nil)
}

func groupLeaveVerb() *command.Verb {
	return groupChangeVerb("leave", "leave a group (or decline its invitation), or remove a member",
		`With --remove AGENT_ID the owner or an admin removes that member instead.`,
		func(fs *flag.FlagSet) func() any {
			remove := fs.String("remove", "", "remove member `AGENT_ID` (owner or admin)")
			return func() any {
				if *remove == "" {
					return nil
				}
				return map[string]string{"agent_id": *remove}
			}
		})
}

func groupDisbandVerb() *command.Verb {
	return groupChangeVerb("disband", "disband a group (owner or admin)",
		`Open votes are cancelled and every member is told. Other members get 403.`, nil)
}

func groupSendVerb() *command.Verb {
	return &command.Verb{
		Name: "group send", Args: "GROUP_ID [TEXT]", MinArgs: 1, MaxArgs: 2,
		Summary: "broadcast a message to a group's members",
		About: `Members that are offline receive it when they return. --body adds a JSON
value.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			`synapse group send GROUP_ID "maintenance at 14:00"`,
			`synapse group send GROUP_ID --body '{"setpoint":21.5}'`,
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			body := fs.String("body", "", "a JSON `VALUE` to send")
			return func(ctx context.Context, args []string) error {
				req := group.MessageRequest{}
				if len(args) > 1 {
					req.Text = args[1]
				}
				if *body != "" {
					if !json.Valid([]byte(*body)) {
						return command.UsageErrorf("--body is not valid JSON")
					}
					req.Body = []byte(*body)
				}
				if req.Text == "" && len(req.Body) == 0 {
					return command.UsageErrorf("give a TEXT, --body, or both")
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var msg group.Message
				if _, err := s.Post(ctx, groupRoute(args[0], "message"), nil, req, &msg); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(&msg)
				}
				fmt.Fprintf(s.IO.Out, "sent %s\n", msg.MessageID)
				return nil
			}
		},
	}
}

func groupMessagesVerb() *command.Verb {
	return &command.Verb{
		Name: "group messages", Args: "GROUP_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "list a group's events as this agent saw them (messages, joins, votes, tasks)",
		About: `Events are numbered per group; --after N lists those after N. The
WebSocket GET /api/v1/synapse/group/GROUP_ID/messages/stream follows them live.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse group messages GROUP_ID", "synapse group messages GROUP_ID --after 12 --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			after := fs.Uint64("after", 0, "list events after seq `N`")
			limit := fs.Int("limit", 100, "at most `N` events")
			return func(ctx context.Context, args []string) error {
				if *limit < 1 || *limit > 1000 {
					return command.UsageErrorf("--limit %d is outside 1..1000", *limit)
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var out struct {
					Events  []group.Event `json:"events"`
					LastSeq uint64        `json:"last_seq"`
				}
				q := url.Values{"after": {strconv.FormatUint(*after, 10)}, "limit": {strconv.Itoa(*limit)}}
				if err := s.Get(ctx, groupRoute(args[0], "messages"), q, &out); err != nil {
					return err
				}
				if s.Flags.JSON {
					if out.Events == nil {
						out.Events = []group.Event{}
					}
					return s.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "SEQ\tAT\tTYPE\tFROM\tTEXT")
				for _, ev := range out.Events {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", ev.Seq, wireTime(ev.At.Time), ev.Type, ev.From, eventText(ev))
				}
				return tw.Flush()
			}
		},
	}
}

// eventText is a short description of an event's payload.
func eventText(ev group.Event) string {
	var p struct {
		Text    string `json:"text"`
		Title   string `json:"title"`
		AgentID string `json:"agent_id"`
		Status  string `json:"status"`
		Result  *struct {
			Outcome string `json:"outcome"`
			Winner  string `json:"winner"`
		} `json:"result"`
	}
	_ = json.Unmarshal(ev.Payload, &p)
	switch {
	case p.Text != "":
		return p.Text
	case p.Result != nil:
		return strings.TrimSpace(p.Title + ": " + p.Result.Outcome + " " + p.Result.Winner)
	case p.Title != "":
		return p.Title
	case p.AgentID != "":
		return p.AgentID
	}
	return p.Status
}

func groupTaskVerb() *command.Verb {
	return &command.Verb{
		Name: "group task", Args: "GROUP_ID TASK_TYPE", MinArgs: 2, MaxArgs: 2,
		Summary: "give a task to a group's members and aggregate their results",
		About: `The owner's agent sends the task to every member that declared TASK_TYPE
(or those named with --member): the whole payload to each, or with --split
FIELD a part of the payload's list FIELD to each. --aggregate all lists
every result, first keeps the first, majority the one more than half of the
members returned. Members that fail or miss the --timeout are listed as
missing.`,
		Agent: true, Timeout: 90 * time.Second,
		Examples: []string{
			`synapse group task GROUP_ID check --payload '{"sensor":"t1"}' --aggregate majority --wait 30s`,
			`synapse group task GROUP_ID resize --payload '{"images":["a","b","c","d"]}' --split images`,
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			payload := fs.String("payload", "{}", "the task payload, a JSON `OBJECT`")
			splitField := fs.String("split", "", "split the list `FIELD` of the payload among the members")
			agg := fs.String("aggregate", "all", "all, first or majority")
			var members command.List
			fs.Var(&members, "member", "send to `AGENT_ID` only (repeatable)")
			timeout := fs.Duration("task-timeout", time.Minute, "deadline of the group task")
			wait := fs.Duration("wait", 0, "wait up to this long (at most 60s) for the aggregate")
			return func(ctx context.Context, args []string) error {
				if !json.Valid([]byte(*payload)) {
					return command.UsageErrorf("--payload is not valid JSON")
				}
				if *wait < 0 || *wait > client.MaxWait {
					return command.UsageErrorf("--wait must be 0 to 60s")
				}
				req := group.TaskRequest{TaskType: args[1], Payload: []byte(*payload), Aggregate: *agg, Members: members,
					TimeoutSeconds: int(timeout.Seconds())}
				if *splitField != "" {
					req.Mode, req.SplitField = group.ModeSplit, *splitField
				}
				var q url.Values
				if *wait > 0 {
					q = url.Values{"wait": {strconv.Itoa(int(wait.Seconds()))}}
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var t group.Task
				accepted, err := s.Post(ctx, groupRoute(args[0], "task"), q, req, &t)
				if err != nil {
					return err
				}
				sentNote(s, accepted, "the task was")
				if s.Flags.JSON {
					return s.PrintJSON(&t)
				}
				printGroupTask(s.IO.Out, &t)
				return nil
			}
		},
	}
}

func groupResultVerb() *command.Verb {
	return &command.Verb{
		Name: "group result", Args: "GROUP_ID GROUP_TASK_ID", MinArgs: 2, MaxArgs: 2,
		Summary: "show a group task, its parts and its aggregate",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse group result GROUP_ID GROUP_TASK_ID --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var t group.Task
				if err := s.Get(ctx, groupRoute(args[0], "task", args[1]), nil, &t); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(&t)
				}
				printGroupTask(s.IO.Out, &t)
				return nil
			}
		},
	}
}

func printGroupTask(w io.Writer, t *group.Task) {
	agreement := ""
	if t.Aggregate == group.AggregateMajority {
		agreement = fmt.Sprintf("%d of %d", t.Agreement, len(t.Parts))
	}
	command.PrintKV(w, []command.KV{
		{"group_task_id", t.TaskID},
		{"task_type", t.TaskType},
		{"status", t.Status},
		{"aggregate", t.Aggregate},
		{"agreement", agreement},
		{"error", t.Error},
	})
	if len(t.Result) > 0 {
		fmt.Fprintf(w, "result:\n%s\n", command.Indent(command.PrettyJSON(string(t.Result)), "  "))
	}
	if len(t.Parts) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PART\tMEMBER\tSTATUS\tRESULT OR ERROR")
		for _, p := range t.Parts {
			out := string(p.Result)
			if p.Error != "" {
				out = p.Error
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", p.Index, p.Member, p.Status, out)
		}
		tw.Flush()
	}
}
