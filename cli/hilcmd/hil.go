// Package hilcmd holds the synapse hil command: the decisions waiting for
// a person (list, show, approve, reject, modify, escalate).
package hilcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// HILVerbs returns the verbs of synapse hil.
func HILVerbs() []*command.Verb {
	return []*command.Verb{hilListVerb(), hilShowVerb(),
		hilDecideVerb(client.ActionApprove), hilDecideVerb(client.ActionReject), hilDecideVerb(client.ActionModify), hilDecideVerb(client.ActionEscalate)}
}

// decisionFields is a repeatable --field k=v flag; v is JSON when it parses as
// JSON (true, 42, "text", {...}), otherwise the text itself.
type decisionFields map[string]any

func (l decisionFields) String() string {
	if len(l) == 0 {
		return ""
	}
	b, _ := json.Marshal(map[string]any(l))
	return string(b)
}

func (l decisionFields) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if k = strings.TrimSpace(k); !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	var x any
	if err := json.Unmarshal([]byte(val), &x); err != nil {
		x = val
	}
	l[k] = x
	return nil
}

func hilListVerb() *command.Verb {
	return &command.Verb{
		Name: "hil list", MaxArgs: 0,
		Summary: "list the requests waiting for a person, most urgent first",
		About: `Shows each pending request's task, escalation level, the scope that may
decide it now, and the time left before it escalates. --all lists decided and
closed requests too, newest first. Needs tasks:read or a hil:l1/l2/l3 scope.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse hil list", "synapse hil list --all --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			all := fs.Bool("all", false, "include decided and closed requests")
			limit := fs.Int("limit", 50, "with --all: list at most `N` requests")
			return func(ctx context.Context, args []string) error {
				if *limit < 1 || *limit > 1000 {
					return command.UsageErrorf("--limit %d is outside 1..1000", *limit)
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				list, err := s.Client().ListHIL(ctx, client.HILListOptions{All: *all, PageSize: *limit})
				if err != nil {
					return err
				}
				if list.Requests == nil {
					list.Requests = []client.HILRequest{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(list)
				}
				if len(list.Requests) == 0 {
					fmt.Fprintln(s.IO.Err, "nothing waits for a person")
					return nil
				}
				now := serverNow(list.ServerTime)
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TASK ID\tTYPE\tSTATE\tLEVEL\tSCOPE\tLEFT\tREASON")
				for _, r := range list.Requests {
					left := "-"
					if r.State == "pending" {
						left = timeLeft(r.Deadline, now)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", r.TaskID, r.TaskType, r.State,
						r.EscalationLevel, r.Levels, r.ReviewersScope, left, oneLine(r.Reason.Message, 60))
				}
				return tw.Flush()
			}
		},
	}
}

// serverNow is the agent's time from a list answer, or the local time.
func serverNow(s string) time.Time {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t
	}
	return time.Now()
}

// timeLeft is the time from now to the deadline, rounded to seconds.
func timeLeft(deadline string, now time.Time) string {
	d, err := time.Parse(time.RFC3339, deadline)
	if err != nil {
		return "-"
	}
	left := d.Sub(now).Round(time.Second)
	if left < 0 {
		return "overdue"
	}
	return left.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func hilShowVerb() *command.Verb {
	return &command.Verb{
		Name: "hil show", Args: "TASK_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "show a task's request for a person with its options and audit trail",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse hil show TASK_ID", "synapse hil show TASK_ID --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				r, err := s.Client().GetHIL(ctx, args[0])
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(r)
				}
				printHIL(s.IO.Out, r)
				return nil
			}
		},
	}
}

// printHIL writes a request as "key: value" lines, then its options and
// audit trail.
func printHIL(w io.Writer, r *client.HILRequest) {
	rows := []command.KV{
		{"task_id", r.TaskID},
		{"task_type", r.TaskType},
		{"target", r.Target},
		{"state", r.State},
		{"reason", strings.TrimPrefix(r.Reason.Code+": "+r.Reason.Message, ": ")},
	}
	if c := r.Context; c != nil {
		rows = append(rows, command.KV{"summary", c.TaskSummary}, command.KV{"blocked", c.BlockedReason})
	}
	rows = append(rows,
		command.KV{"level", fmt.Sprintf("%d of %d (%s)", r.EscalationLevel, r.Levels, r.ReviewersScope)},
		command.KV{"deadline", r.Deadline},
		command.KV{"created_at", r.CreatedAt},
		command.KV{"closed_at", r.ClosedAt},
		command.KV{"note", r.Note},
	)
	if d := r.Decision; d != nil {
		rows = append(rows, command.KV{"decision", fmt.Sprintf("%s by %s at level %d", d.Action, d.DecidedBy, d.Level)},
			command.KV{"rejection_reason", d.RejectionReason}, command.KV{"notes", d.Notes})
		if len(d.ApprovedFields) > 0 {
			b, _ := json.Marshal(d.ApprovedFields)
			rows = append(rows, command.KV{"approved_fields", string(b)})
		}
	}
	command.PrintKV(w, rows)
	if len(r.Options) > 0 {
		fmt.Fprintln(w, "options:")
		for _, o := range r.Options {
			b, _ := json.Marshal(o.Value)
			line := fmt.Sprintf("  %s = %s", o.Field, b)
			if o.ProsCons != "" {
				line += "  (" + o.ProsCons + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	if len(r.Steps) > 0 {
		fmt.Fprintln(w, "steps:")
		for _, st := range r.Steps {
			line := fmt.Sprintf("  %s  %s", st.At, st.Step)
			if st.Level > 0 {
				line += fmt.Sprintf(" level %d", st.Level)
			}
			for _, x := range []string{st.Action, st.Actor, st.Detail} {
				if x != "" {
					line += "  " + x
				}
			}
			fmt.Fprintln(w, line)
		}
	}
}

func hilDecideVerb(action string) *command.Verb {
	v := &command.Verb{
		Name: "hil " + action, Args: "TASK_ID", MinArgs: 1, MaxArgs: 1,
		Agent: true, Timeout: command.DefaultRequestTimeout,
	}
	switch action {
	case client.ActionApprove:
		v.Summary = "approve a task's request, optionally with fields"
		v.Examples = []string{"synapse hil approve TASK_ID", `synapse hil approve TASK_ID --field authorized=true --notes "licence checked"`}
	case client.ActionReject:
		v.Summary = "reject a task's request"
		v.Examples = []string{`synapse hil reject TASK_ID --reason "not during business hours"`}
	case client.ActionModify:
		v.Summary = "approve a task's request with changed fields"
		v.Examples = []string{`synapse hil modify TASK_ID --field window='"tonight"' --field retries=3`}
	case client.ActionEscalate:
		v.Summary = "hand a task's request to the next escalation level without deciding"
		v.Examples = []string{`synapse hil escalate TASK_ID --notes "needs the plant manager"`}
	}
	v.About = `The token needs the reviewers scope of the request's current escalation
level (hil:l1, hil:l2, hil:l3 by default) or admin. A request that is already
decided is refused (exit 1, HTTP 409).`
	takesFields := action == client.ActionApprove || action == client.ActionModify
	if takesFields {
		v.About += ` --field KEY=VALUE takes VALUE as JSON when
it parses as JSON (true, 3, "text", {...}) and as text otherwise.`
	}
	if action == client.ActionEscalate {
		v.About += ` At the last level escalating is refused (exit 1, HTTP 409).`
	}
	v.Setup = func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
		fields := decisionFields{}
		if takesFields {
			fs.Var(fields, "field", "approve with field `KEY=VALUE` (repeatable)")
		}
		reason := ""
		if action == client.ActionReject {
			fs.StringVar(&reason, "reason", "", "record `TEXT` as the rejection reason")
		}
		notes := fs.String("notes", "", "record `TEXT` as notes with the decision")
		return func(ctx context.Context, args []string) error {
			if action == client.ActionModify && len(fields) == 0 {
				return command.UsageErrorf("modify needs at least one --field KEY=VALUE")
			}
			d := client.DecisionRequest{Action: action, RejectionReason: reason, Notes: *notes}
			if len(fields) > 0 {
				d.ApprovedFields = fields
			}
			ctx, cancel := s.WithTimeout(ctx)
			defer cancel()
			r, err := s.Client().DecideHIL(ctx, args[0], d)
			if err != nil {
				return err
			}
			if s.Flags.JSON {
				return s.PrintJSON(r)
			}
			if action == client.ActionEscalate {
				fmt.Fprintf(s.IO.Out, "handed task %s to level %d of %d (%s)\n", r.TaskID, r.EscalationLevel, r.Levels, r.ReviewersScope)
				return nil
			}
			status := ""
			if r.Decision != nil {
				status = r.Decision.TaskStatus
			}
			fmt.Fprintf(s.IO.Out, "%s task %s at level %d; the task is %s\n", pastTense(action), r.TaskID, r.EscalationLevel, command.OrDash(status))
			return nil
		}
	}
	return v
}

func pastTense(action string) string {
	switch action {
	case client.ActionApprove:
		return "approved"
	case client.ActionReject:
		return "rejected"
	}
	return "approved with changes"
}
