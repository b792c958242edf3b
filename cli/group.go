package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/wire"
)

func groupVerbs() []*verb {
	return []*verb{groupCreateVerb(), groupListVerb(), groupShowVerb(), groupInviteVerb(), groupJoinVerb(),
		groupLeaveVerb(), groupDisbandVerb(), groupSendVerb(), groupMessagesVerb(), groupTaskVerb(), groupResultVerb()}
}

// api sends one JSON request to the agent of the global flags (route below
// /api/v1/synapse) and decodes a 2xx answer into out; other answers are
// *client.APIError. It returns the status.
func (s *session) api(ctx context.Context, method, route string, query url.Values, body, out any) (int, error) {
	u := s.g.agent + wire.APIPrefix + route
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, route, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "synapse-cli/"+Version)
	if tok, _ := s.token(); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, client.MaxResponseSize))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: read answer: %w", method, route, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, client.DecodeError(resp.StatusCode, b)
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w", method, route, err)
		}
	}
	return resp.StatusCode, nil
}

// groupRoute is /group/{id} plus more path segments, each escaped.
func groupRoute(id string, more ...string) string {
	r := "/group/" + url.PathEscape(id)
	for _, m := range more {
		r += "/" + url.PathEscape(m)
	}
	return r
}

// sentNote says what a 202 means.
func (s *session) sentNote(status int, what string) {
	if status == http.StatusAccepted && !s.g.json {
		fmt.Fprintf(s.io.Err, "%s sent to the group's owner; the outcome arrives as an announcement\n", what)
	}
}

// idList is a repeatable flag of comma-separated values.
type idList []string

func (l *idList) String() string { return strings.Join(*l, ",") }

func (l *idList) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}

func printGroup(w io.Writer, g *group.Group) {
	printKV(w, []kv{
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

func groupCreateVerb() *verb {
	return &verb{
		name: "group create", args: "NAME", minArgs: 1, maxArgs: 1,
		summary: "create a group owned by this agent",
		about: `The agent becomes the group's owner and coordinates it. Each --member (a
paired peer) is invited; it joins with 'synapse group join' on its own agent.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			`synapse group create line-3 --description "the agents of line 3"`,
			"synapse group create line-3 --member edge_plc1_a1b2c3 --member edge_cam2_d4e5f6",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			desc := fs.String("description", "", "what the group is for")
			var members idList
			fs.Var(&members, "member", "invite `AGENT_ID` (repeatable, or comma-separated)")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var g group.Group
				req := group.CreateRequest{Name: args[0], Description: *desc, InitialMembers: members}
				if _, err := s.api(ctx, http.MethodPost, "/group", nil, req, &g); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(&g)
				}
				printGroup(s.io.Out, &g)
				return nil
			}
		},
	}
}

func groupListVerb() *verb {
	return &verb{
		name: "group list", maxArgs: 0,
		summary: "list the groups this agent owns, belongs to or is invited to",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse group list", "synapse group list --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var out struct {
					Groups []group.Group `json:"groups"`
				}
				if _, err := s.api(ctx, http.MethodGet, "/groups", nil, nil, &out); err != nil {
					return err
				}
				if s.g.json {
					if out.Groups == nil {
						out.Groups = []group.Group{}
					}
					return s.printJSON(out)
				}
				if len(out.Groups) == 0 {
					fmt.Fprintln(s.io.Err, "no groups")
					return nil
				}
				tw := tabwriter.NewWriter(s.io.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP ID\tNAME\tOWNER\tSTATUS\tSTANDING\tMEMBERS")
				for _, g := range out.Groups {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", g.GroupID, g.Name, g.Owner, g.Status, g.Standing, len(g.Members))
				}
				return tw.Flush()
			}
		},
	}
}

func groupShowVerb() *verb {
	return &verb{
		name: "group show", args: "GROUP_ID", minArgs: 1, maxArgs: 1,
		summary: "show a group and its members",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse group show 0190c3e2-7b1a-7c44-9a51-2f0e8d6b4a10"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var g group.Group
				if _, err := s.api(ctx, http.MethodGet, groupRoute(args[0]), nil, nil, &g); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(&g)
				}
				printGroup(s.io.Out, &g)
				return nil
			}
		},
	}
}

func groupInviteVerb() *verb {
	return &verb{
		name: "group invite", args: "GROUP_ID AGENT_ID", minArgs: 2, maxArgs: 2,
		summary: "invite a paired agent into a group (owner or admin)",
		about: `AGENT_ID must be a paired peer of the group's owner. Its weight counts in
weighted votes. On an admin's agent the invitation is sent to the owner's
agent, which makes it.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse group invite GROUP_ID edge_plc1_a1b2c3",
			"synapse group invite GROUP_ID edge_cam2_d4e5f6 --role admin --weight 2",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			role := fs.String("role", "member", "member or admin")
			weight := fs.Float64("weight", 1, "weight in weighted votes")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var g group.Group
				req := group.InviteRequest{AgentID: args[1], Role: group.Role(*role), Weight: *weight}
				status, err := s.api(ctx, http.MethodPost, groupRoute(args[0], "invite"), nil, req, &g)
				if err != nil {
					return err
				}
				s.sentNote(status, "the invitation was")
				if s.g.json {
					return s.printJSON(&g)
				}
				fmt.Fprintf(s.io.Out, "invited %s to %s\n", args[1], args[0])
				return nil
			}
		},
	}
}

// groupChangeVerb is join, leave or disband.
func groupChangeVerb(name, summary, about string, flags func(fs *flag.FlagSet) func() any) *verb {
	return &verb{
		name: "group " + name, args: "GROUP_ID", minArgs: 1, maxArgs: 1,
		summary: summary, about: about,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{"synapse group " + name + " GROUP_ID"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			body := func() any { return nil }
			if flags != nil {
				body = flags(fs)
			}
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var g group.Group
				status, err := s.api(ctx, http.MethodPost, groupRoute(args[0], name), nil, body(), &g)
				if err != nil {
					return err
				}
				s.sentNote(status, "the request was")
				if s.g.json {
					return s.printJSON(&g)
				}
				printKV(s.io.Out, []kv{{"group_id", g.GroupID}, {"status", g.Status}, {"standing", g.Standing}})
				return nil
			}
		},
	}
}

func groupJoinVerb() *verb {
	return groupChangeVerb("join", "accept this agent's invitation to a group",
		`The join goes to the group's owner, which adds the member and tells every
member; the standing is "joining" until then.`, nil)
}

func groupLeaveVerb() *verb {
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

func groupDisbandVerb() *verb {
	return groupChangeVerb("disband", "disband a group (owner or admin)",
		`Open votes are cancelled and every member is told. Other members get 403.`, nil)
}

func groupSendVerb() *verb {
	return &verb{
		name: "group send", args: "GROUP_ID [TEXT]", minArgs: 1, maxArgs: 2,
		summary: "broadcast a message to a group's members",
		about: `Members that are offline receive it when they return. --body adds a JSON
value.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			`synapse group send GROUP_ID "maintenance at 14:00"`,
			`synapse group send GROUP_ID --body '{"setpoint":21.5}'`,
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			body := fs.String("body", "", "a JSON `VALUE` to send")
			return func(ctx context.Context, args []string) error {
				req := group.MessageRequest{}
				if len(args) > 1 {
					req.Text = args[1]
				}
				if *body != "" {
					if !json.Valid([]byte(*body)) {
						return usageErrorf("--body is not valid JSON")
					}
					req.Body = []byte(*body)
				}
				if req.Text == "" && len(req.Body) == 0 {
					return usageErrorf("give a TEXT, --body, or both")
				}
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var msg group.Message
				if _, err := s.api(ctx, http.MethodPost, groupRoute(args[0], "message"), nil, req, &msg); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(&msg)
				}
				fmt.Fprintf(s.io.Out, "sent %s\n", msg.MessageID)
				return nil
			}
		},
	}
}

func groupMessagesVerb() *verb {
	return &verb{
		name: "group messages", args: "GROUP_ID", minArgs: 1, maxArgs: 1,
		summary: "list a group's events as this agent saw them (messages, joins, votes, tasks)",
		about: `Events are numbered per group; --after N lists those after N. The
WebSocket GET /api/v1/synapse/group/GROUP_ID/messages/stream follows them live.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{"synapse group messages GROUP_ID", "synapse group messages GROUP_ID --after 12 --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			after := fs.Uint64("after", 0, "list events after seq `N`")
			limit := fs.Int("limit", 100, "at most `N` events")
			return func(ctx context.Context, args []string) error {
				if *limit < 1 || *limit > 1000 {
					return usageErrorf("--limit %d is outside 1..1000", *limit)
				}
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var out struct {
					Events  []group.Event `json:"events"`
					LastSeq uint64        `json:"last_seq"`
				}
				q := url.Values{"after": {strconv.FormatUint(*after, 10)}, "limit": {strconv.Itoa(*limit)}}
				if _, err := s.api(ctx, http.MethodGet, groupRoute(args[0], "messages"), q, nil, &out); err != nil {
					return err
				}
				if s.g.json {
					if out.Events == nil {
						out.Events = []group.Event{}
					}
					return s.printJSON(out)
				}
				tw := tabwriter.NewWriter(s.io.Out, 0, 0, 2, ' ', 0)
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

func groupTaskVerb() *verb {
	return &verb{
		name: "group task", args: "GROUP_ID TASK_TYPE", minArgs: 2, maxArgs: 2,
		summary: "give a task to a group's members and aggregate their results",
		about: `The owner's agent sends the task to every member that declared TASK_TYPE
(or those named with --member): the whole payload to each, or with --split
FIELD a part of the payload's list FIELD to each. --aggregate all lists
every result, first keeps the first, majority the one more than half of the
members returned. Members that fail or miss the --timeout are listed as
missing.`,
		agent: true, timeout: 90 * time.Second,
		examples: []string{
			`synapse group task GROUP_ID check --payload '{"sensor":"t1"}' --aggregate majority --wait 30s`,
			`synapse group task GROUP_ID resize --payload '{"images":["a","b","c","d"]}' --split images`,
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			payload := fs.String("payload", "{}", "the task payload, a JSON `OBJECT`")
			splitField := fs.String("split", "", "split the list `FIELD` of the payload among the members")
			agg := fs.String("aggregate", "all", "all, first or majority")
			var members idList
			fs.Var(&members, "member", "send to `AGENT_ID` only (repeatable)")
			timeout := fs.Duration("task-timeout", time.Minute, "deadline of the group task")
			wait := fs.Duration("wait", 0, "wait up to this long (at most 60s) for the aggregate")
			return func(ctx context.Context, args []string) error {
				if !json.Valid([]byte(*payload)) {
					return usageErrorf("--payload is not valid JSON")
				}
				if *wait < 0 || *wait > client.MaxWait {
					return usageErrorf("--wait must be 0 to 60s")
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
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var t group.Task
				status, err := s.api(ctx, http.MethodPost, groupRoute(args[0], "task"), q, req, &t)
				if err != nil {
					return err
				}
				s.sentNote(status, "the task was")
				if s.g.json {
					return s.printJSON(&t)
				}
				printGroupTask(s.io.Out, &t)
				return nil
			}
		},
	}
}

func groupResultVerb() *verb {
	return &verb{
		name: "group result", args: "GROUP_ID GROUP_TASK_ID", minArgs: 2, maxArgs: 2,
		summary: "show a group task, its parts and its aggregate",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse group result GROUP_ID GROUP_TASK_ID --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var t group.Task
				if _, err := s.api(ctx, http.MethodGet, groupRoute(args[0], "task", args[1]), nil, nil, &t); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(&t)
				}
				printGroupTask(s.io.Out, &t)
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
	printKV(w, []kv{
		{"group_task_id", t.TaskID},
		{"task_type", t.TaskType},
		{"status", t.Status},
		{"aggregate", t.Aggregate},
		{"agreement", agreement},
		{"error", t.Error},
	})
	if len(t.Result) > 0 {
		fmt.Fprintf(w, "result:\n%s\n", indent(prettyJSON(string(t.Result)), "  "))
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
