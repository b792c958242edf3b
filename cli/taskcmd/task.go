// Package taskcmd holds the synapse task command: submit, get, list,
// cancel, watch (live, with a progress bar on a terminal) and info.
package taskcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// maxPayloadSize bounds a payload read from a file or standard input.
const maxPayloadSize = 16 << 20

// TaskVerbs returns the verbs of synapse task.
func TaskVerbs() []*command.Verb {
	return []*command.Verb{taskSubmitVerb(), taskGetVerb(), taskListVerb(), taskCancelVerb(), taskWatchVerb(), taskInfoVerb()}
}

func taskSubmitVerb() *command.Verb {
	return &command.Verb{
		Name: "task submit", Args: "TYPE [-]", MinArgs: 1, MaxArgs: 2,
		Summary: "submit a task and print its id and status",
		About: `The payload is a JSON object given with --payload, read from --payload-file
(a file name, or - for standard input), or read from standard input when the
argument - follows TYPE. Without any, the payload is {}.

With --wait the agent holds its answer until the task ends, at most the given
time (60s at most). If the task ended in time the whole task is printed, with
its result, and the exit code is 1 unless it completed; otherwise the id and
status are printed as without --wait.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			`synapse task submit echo --payload '{"msg":"hello"}'`,
			`synapse task submit sleep --payload '{"ms":2000}' --wait 10s`,
			`echo '{"msg":"from stdin"}' | synapse task submit echo -`,
			`synapse task submit resize --payload-file job.json --key job-42 --ttl 600 --json`,
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			payload := fs.String("payload", "", "task payload, a JSON `OBJECT`")
			payloadFile := fs.String("payload-file", "", "read the payload from `FILE` (- for standard input)")
			wait := fs.Duration("wait", 0, "wait up to `DURATION` (at most 60s) for the task to end")
			key := fs.String("key", "", "idempotency `KEY`: resubmitting with the same key and payload returns the first task")
			ttl := fs.Int("ttl", 0, "time to live of the task in `SECONDS`")
			target := fs.String("target", "", "run the task on the peer agent with this `AGENT_ID`")
			callback := fs.String("callback", "", "`URL` the agent calls back when the task ends")
			priority := fs.String("priority", "", "task priority: low, normal, high or urgent")
			return func(ctx context.Context, args []string) error {
				taskType := args[0]
				stdin := len(args) == 2
				if stdin && args[1] != "-" {
					return command.UsageErrorf("unexpected argument %q (only - for standard input may follow TYPE)", args[1])
				}
				sources := 0
				for _, set := range []bool{*payload != "", *payloadFile != "", stdin} {
					if set {
						sources++
					}
				}
				if sources > 1 {
					return command.UsageErrorf("give the payload once: --payload, --payload-file or -")
				}
				if *wait < 0 || *wait > client.MaxWait {
					return command.UsageErrorf("--wait %s: must be between 0 and %s", *wait, client.MaxWait)
				}
				if *ttl < 0 {
					return command.UsageErrorf("--ttl %d: must not be negative", *ttl)
				}
				body, err := readPayload(s, *payload, *payloadFile, stdin)
				if err != nil {
					return err
				}
				req := client.SubmitRequest{
					TaskType: taskType, Payload: body, TTLSeconds: *ttl, Target: *target,
					CallbackURL: *callback, Priority: *priority, IdempotencyKey: *key,
				}
				if s.Flags.Timeout > 0 {
					s.Flags.Timeout += *wait
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				sub, ts, err := s.Client().SubmitTask(ctx, req, client.SubmitOptions{IdempotencyKey: *key, Wait: *wait})
				if err != nil {
					return err
				}
				if ts != nil {
					if s.Flags.JSON {
						if err := s.PrintJSON(ts); err != nil {
							return err
						}
					} else {
						printTask(s.IO.Out, ts)
					}
					return taskOutcome(ts)
				}
				if s.Flags.JSON {
					return s.PrintJSON(sub)
				}
				replayed := ""
				if sub.Replayed {
					replayed = "true"
				}
				command.PrintKV(s.IO.Out, []command.KV{{"task_id", sub.TaskID}, {"status", sub.Status}, {"message", sub.Message}, {"replayed", replayed}})
				return nil
			}
		},
	}
}

// readPayload returns the payload from the flag, a file or standard input,
// checked to be a JSON object; {} when none is given.
func readPayload(s *command.Session, inline, file string, stdin bool) (json.RawMessage, error) {
	var b []byte
	switch {
	case inline != "":
		b = []byte(inline)
	case file == "-" || stdin:
		var err error
		if b, err = readLimited(s.IO.In, "standard input"); err != nil {
			return nil, err
		}
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("read payload: %w", err)
		}
		defer f.Close()
		if b, err = readLimited(f, file); err != nil {
			return nil, err
		}
	default:
		return json.RawMessage("{}"), nil
	}
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, command.UsageErrorf("the payload is not valid JSON")
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, command.UsageErrorf("the payload must be a JSON object")
	}
	return json.RawMessage(b), nil
}

// readLimited reads all of r up to maxPayloadSize.
func readLimited(r io.Reader, name string) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("read payload: no %s", name)
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPayloadSize+1))
	if err != nil {
		return nil, fmt.Errorf("read payload from %s: %w", name, err)
	}
	if len(b) > maxPayloadSize {
		return nil, fmt.Errorf("read payload from %s: larger than %d bytes", name, maxPayloadSize)
	}
	return b, nil
}

// taskOutcome is nil for a completed task and an exit-1 error naming the
// state and error of any other.
func taskOutcome(t *client.TaskStatus) error {
	if t.Status == "completed" {
		return nil
	}
	msg := fmt.Sprintf("task %s ended %s", t.TaskID, t.Status)
	if !t.Terminal() {
		msg = fmt.Sprintf("task %s is %s", t.TaskID, t.Status)
	}
	if t.ErrorCode != "" || t.ErrorMessage != "" {
		msg += ": " + strings.TrimSuffix(t.ErrorCode+": "+t.ErrorMessage, ": ")
	}
	return &command.ExitError{Code: command.ExitFailure, Msg: msg}
}

func taskGetVerb() *command.Verb {
	return &command.Verb{
		Name: "task get", Args: "TASK_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "show a task: status, progress, result, error and history",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse task get 0194f0c2-7b7e-7c4e-9a51-3c0d2f1e8a77", "synapse task get TASK_ID --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				ts, err := s.Client().GetTask(ctx, args[0])
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(ts)
				}
				printTask(s.IO.Out, ts)
				return nil
			}
		},
	}
}

func taskListVerb() *command.Verb {
	return &command.Verb{
		Name: "task list", MaxArgs: 0,
		Summary: "list tasks, newest first, filtered by status and type",
		About: `Without --all one page of at most --limit tasks is listed, and the token of
the next page, if any, is printed on standard error. With --all every page is
fetched.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse task list",
			"synapse task list --status executing --type sleep",
			"synapse task list --all --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			status := fs.String("status", "", "only tasks in this `STATE` (e.g. executing, completed)")
			taskType := fs.String("type", "", "only tasks of this `TYPE`")
			limit := fs.Int("limit", 50, "tasks per page")
			all := fs.Bool("all", false, "follow the pages to the end")
			pageToken := fs.String("page-token", "", "start at this page `TOKEN`")
			return func(ctx context.Context, args []string) error {
				if *limit <= 0 {
					return command.UsageErrorf("--limit %d: must be positive", *limit)
				}
				c := s.Client()
				opts := client.ListOptions{Status: *status, TaskType: *taskType, PageSize: *limit, PageToken: *pageToken}
				var out client.TaskList
				seen := map[string]bool{}
				for page := 0; ; page++ {
					if page >= command.MaxListPages {
						return fmt.Errorf("list tasks: stopped after %d pages", command.MaxListPages)
					}
					rctx, cancel := s.WithTimeout(ctx)
					tl, err := c.ListTasks(rctx, opts)
					cancel()
					if err != nil {
						return err
					}
					out.Tasks = append(out.Tasks, tl.Tasks...)
					out.NextPageToken = tl.NextPageToken
					if !*all || tl.NextPageToken == "" {
						break
					}
					if seen[tl.NextPageToken] {
						return fmt.Errorf("list tasks: the agent repeated page token %q", tl.NextPageToken)
					}
					seen[tl.NextPageToken] = true
					opts.PageToken = tl.NextPageToken
				}
				if out.Tasks == nil {
					out.Tasks = []client.TaskStatus{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(out)
				}
				printTaskTable(s.IO.Out, out.Tasks)
				if out.NextPageToken != "" {
					fmt.Fprintf(s.IO.Err, "more tasks: synapse task list --page-token %s (or --all)\n", out.NextPageToken)
				}
				return nil
			}
		},
	}
}

func taskCancelVerb() *command.Verb {
	return &command.Verb{
		Name: "task cancel", Args: "TASK_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "cancel a task",
		About: `Cancelling a cancelled task succeeds again; a task that already ended
otherwise cannot be cancelled (task_already_completed, exit code 1).`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse task cancel TASK_ID"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				ts, err := s.Client().CancelTask(ctx, args[0])
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(ts)
				}
				status := ts.Status
				if status == "" {
					status = "cancel requested"
				}
				fmt.Fprintf(s.IO.Out, "task %s: %s\n", args[0], status)
				return nil
			}
		},
	}
}

func taskInfoVerb() *command.Verb {
	return &command.Verb{
		Name: "task info", Args: "TASK_ID [FIELD=VALUE ...]", MinArgs: 1, MaxArgs: -1,
		Summary: "supply the missing fields a task in state info_needed asks for",
		About: `Each --field FIELD=VALUE (as hil approve takes them) or FIELD=VALUE argument
sets one field; VALUE is taken as JSON when it parses as JSON (42, true,
{"a":1}, "quoted") and as a string otherwise. --fields gives several at once
as a JSON object; the single fields override it.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse task info TASK_ID --field style=classic --field width=800",
			"synapse task info TASK_ID style=classic width=800",
			`synapse task info TASK_ID --fields '{"style":"classic","width":800}'`,
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			fieldsJSON := fs.String("fields", "", "fields as a JSON `OBJECT`")
			var fieldArgs []string
			fs.Func("field", "set field `FIELD=VALUE` (repeatable)", func(v string) error {
				fieldArgs = append(fieldArgs, v)
				return nil
			})
			return func(ctx context.Context, args []string) error {
				fields, err := parseFields(*fieldsJSON, append(fieldArgs, args[1:]...))
				if err != nil {
					return err
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				ts, err := s.Client().ProvideInfo(ctx, args[0], fields)
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(ts)
				}
				status := ts.Status
				if status == "" {
					status = "info sent"
				}
				fmt.Fprintf(s.IO.Out, "task %s: %s\n", args[0], status)
				return nil
			}
		},
	}
}

// parseFields merges a JSON object and FIELD=VALUE arguments.
func parseFields(obj string, pairs []string) (map[string]any, error) {
	fields := map[string]any{}
	if obj != "" {
		if err := json.Unmarshal([]byte(obj), &fields); err != nil || fields == nil {
			return nil, command.UsageErrorf("--fields is not a JSON object")
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, command.UsageErrorf("argument %q: want FIELD=VALUE", p)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v
		}
		fields[k] = val
	}
	if len(fields) == 0 {
		return nil, command.UsageErrorf("no fields given: use --field FIELD=VALUE, FIELD=VALUE or --fields")
	}
	return fields, nil
}
