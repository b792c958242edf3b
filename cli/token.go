package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/client"
)

func tokenVerbs() []*verb {
	return []*verb{tokenCreateVerb(), tokenListVerb(), tokenRevokeVerb()}
}

// scopeList is a repeatable flag of comma-separated scopes.
type scopeList []string

func (l *scopeList) String() string { return strings.Join(*l, ",") }

func (l *scopeList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func tokenCreateVerb() *verb {
	return &verb{
		name: "token create", args: "NAME", minArgs: 1, maxArgs: 1,
		summary: "create an API token and print its secret (shown only once)",
		about: `Scopes: tasks:read (get, list, watch), tasks:write (submit, cancel, info),
admin (everything, including tokens and the database). Without --scope the
token gets tasks:read and tasks:write. Needs an admin token.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse token create dashboard --scope tasks:read",
			"synapse token create ci --scope tasks:read,tasks:write --json",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			var scopes scopeList
			fs.Var(&scopes, "scope", "grant this `SCOPE` (repeatable, or comma-separated)")
			return func(ctx context.Context, args []string) error {
				if len(scopes) == 0 {
					scopes = scopeList{client.ScopeTasksRead, client.ScopeTasksWrite}
				}
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				tc, err := s.client().CreateToken(ctx, args[0], scopes)
				if err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(tc)
				}
				printKV(s.io.Out, []kv{
					{"token_id", tc.TokenID},
					{"name", tc.Name},
					{"scopes", strings.Join(tc.Scopes, ",")},
					{"created_at", tc.CreatedAt},
					{"token", tc.Token},
				})
				fmt.Fprintln(s.io.Err, "Keep the token now: the agent stores only its hash and cannot show it again.")
				return nil
			}
		},
	}
}

func tokenListVerb() *verb {
	return &verb{
		name: "token list", maxArgs: 0,
		summary: "list the API tokens (without their secrets)",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse token list", "synapse token list --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				tokens, err := s.client().ListTokens(ctx)
				if err != nil {
					return err
				}
				if tokens == nil {
					tokens = []client.TokenInfo{}
				}
				if s.g.json {
					return s.printJSON(map[string]any{"tokens": tokens})
				}
				tw := tabwriter.NewWriter(s.io.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TOKEN ID\tNAME\tSCOPES\tCREATED")
				for _, t := range tokens {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.TokenID, t.Name, strings.Join(t.Scopes, ","), t.CreatedAt)
				}
				return tw.Flush()
			}
		},
	}
}

func tokenRevokeVerb() *verb {
	return &verb{
		name: "token revoke", args: "TOKEN_ID", minArgs: 1, maxArgs: 1,
		summary: "revoke an API token; requests with it are refused from then on",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse token revoke TOKEN_ID"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				if err := s.client().RevokeToken(ctx, args[0]); err != nil {
					return err
				}
				if s.g.json {
					return s.printJSON(map[string]any{"token_id": args[0], "revoked": true})
				}
				fmt.Fprintf(s.io.Out, "revoked token %s\n", args[0])
				return nil
			}
		},
	}
}
