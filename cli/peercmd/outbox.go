package peercmd

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

// maxErrorColumn bounds the last_error column of outbox list.
const maxErrorColumn = 60

// outboxPageSize is the page size outbox list asks for (the agent's most).
const outboxPageSize = 1000

// OutboxVerbs returns the verbs of synapse outbox.
func OutboxVerbs() []*command.Verb {
	return []*command.Verb{outboxListVerb(), outboxRetryVerb(), outboxDropVerb()}
}

func outboxListVerb() *command.Verb {
	return &command.Verb{
		Name: "outbox list", MaxArgs: 0,
		Summary: "list the messages waiting in the outbox, or the dead letters",
		About: `The outbox holds P2P messages and callbacks until their destination takes
them; each failed delivery is retried later with backoff. A message that
used up its retries becomes a dead letter (--dead) until it is retried or
dropped. The DESTINATION column is a peer's agent_id or a callback URL.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse outbox list",
			"synapse outbox list --dead",
			"synapse outbox list --peer edge-1_gateway_3fa9c2 --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			dead := fs.Bool("dead", false, "list the dead letters instead of the pending messages")
			peer := fs.String("peer", "", "only the messages to the agent with this `AGENT_ID`")
			hook := fs.String("url", "", "only the callbacks to this webhook `URL`")
			return func(ctx context.Context, args []string) error {
				if *peer != "" && *hook != "" {
					return command.UsageErrorf("give --peer or --url, not both")
				}
				q := client.OutboxQuery{State: client.OutboxPending, Peer: *peer, URL: *hook, Limit: outboxPageSize}
				if *dead {
					q.State = client.OutboxDead
				}
				items, err := listOutbox(ctx, s, q)
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"items": items})
				}
				when, whenOf := "NEXT ATTEMPT", func(it client.OutboxItem) string { return it.NextAttemptAt }
				if *dead {
					when, whenOf = "DEAD SINCE", func(it client.OutboxItem) string { return it.DeadAt }
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "ID\tDESTINATION\tTYPE\tATTEMPTS\t%s\tLAST ERROR\n", when)
				for _, it := range items {
					dest := it.Peer
					if dest == "" {
						dest = it.URL
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", it.ID, command.OrDash(dest), command.OrDash(it.Type), it.Attempts,
						command.OrDash(timeText(whenOf(it))), command.OrDash(clip(it.LastError, maxErrorColumn)))
				}
				return tw.Flush()
			}
		},
	}
}

// listOutbox follows the pages of the outbox list to the end.
func listOutbox(ctx context.Context, s *command.Session, q client.OutboxQuery) ([]client.OutboxItem, error) {
	c := s.Client()
	items := []client.OutboxItem{}
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= command.MaxListPages {
			return nil, fmt.Errorf("list outbox: stopped after %d pages", command.MaxListPages)
		}
		rctx, cancel := s.WithTimeout(ctx)
		p, err := c.ListOutbox(rctx, q)
		cancel()
		if err != nil {
			return nil, err
		}
		items = append(items, p.Items...)
		if p.NextPageToken == "" {
			return items, nil
		}
		if seen[p.NextPageToken] {
			return nil, fmt.Errorf("list outbox: the agent repeated page token %q", p.NextPageToken)
		}
		seen[p.NextPageToken] = true
		q.PageToken = p.NextPageToken
	}
}

// clip shortens s to at most n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func outboxRetryVerb() *command.Verb {
	return &command.Verb{
		Name: "outbox retry", Args: "[ID]", MinArgs: 0, MaxArgs: 1,
		Summary: "deliver an outbox message now, or requeue the dead letters of a peer",
		About: `With ID, the message is put back in line for delivery now: a dead letter is
requeued with a fresh retry budget, a pending message skips the rest of its
backoff. With --peer (or --url) instead, every dead letter to that agent (or
webhook) is requeued, in its original order.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse outbox retry 0194f0c2-7b7e-7c4e-9a51-3c0d2f1e8a77",
			"synapse outbox retry --peer edge-1_gateway_3fa9c2",
			"synapse outbox retry --url https://hooks.example.com/synapse",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			peer := fs.String("peer", "", "requeue every dead letter to the agent with this `AGENT_ID`")
			hook := fs.String("url", "", "requeue every dead letter to this webhook `URL`")
			return func(ctx context.Context, args []string) error {
				given := len(args)
				for _, v := range []string{*peer, *hook} {
					if v != "" {
						given++
					}
				}
				if given != 1 {
					return command.UsageErrorf("give one of: the ID of a message, --peer AGENT_ID, --url URL")
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				c := s.Client()
				if len(args) == 0 {
					n, err := c.RetryDeadLetters(ctx, *peer, *hook)
					if err != nil {
						return err
					}
					if s.Flags.JSON {
						out := map[string]any{"requeued": n}
						if *peer != "" {
							out["peer"] = *peer
						} else {
							out["url"] = *hook
						}
						return s.PrintJSON(out)
					}
					fmt.Fprintf(s.IO.Out, "requeued %d dead letters to %s\n", n, *peer+*hook)
					return nil
				}
				it, err := c.RetryOutbox(ctx, args[0])
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(it)
				}
				when := ""
				if t := timeText(it.NextAttemptAt); t != "" {
					when = ", next attempt " + t
				}
				fmt.Fprintf(s.IO.Out, "requeued message %s (%s%s)\n", args[0], command.OrDash(it.State), when)
				return nil
			}
		},
	}
}

func outboxDropVerb() *command.Verb {
	return &command.Verb{
		Name: "outbox drop", Args: "ID", MinArgs: 1, MaxArgs: 1,
		Summary: "delete an outbox message for good, pending or dead",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse outbox drop 0194f0c2-7b7e-7c4e-9a51-3c0d2f1e8a77"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				if err := s.Client().DropOutbox(ctx, args[0]); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"id": args[0], "dropped": true})
				}
				fmt.Fprintf(s.IO.Out, "dropped message %s\n", args[0])
				return nil
			}
		},
	}
}
