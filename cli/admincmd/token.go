// Package admincmd holds the synapse commands of an agent's administrator:
// token (API tokens), db (check, backup) and audit (the hash-chained log of
// security events); db and audit also work on the data directory directly
// when no agent serves it.
package admincmd

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/wire"
)

// TokenVerbs returns the verbs of synapse token.
func TokenVerbs() []*command.Verb {
	return []*command.Verb{tokenCreateVerb(), tokenListVerb(), tokenRevokeVerb()}
}

func tokenCreateVerb() *command.Verb {
	return &command.Verb{
		Name: "token create", Args: "NAME", MinArgs: 1, MaxArgs: 1,
		Summary: "create an API token and print its secret (shown only once)",
		About:   scopesAbout(),
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse token create dashboard --scope tasks:read",
			"synapse token create ci --scope tasks:read,tasks:write --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			var scopes command.List
			fs.Var(&scopes, "scope", "grant this `SCOPE` (repeatable, or comma-separated)")
			return func(ctx context.Context, args []string) error {
				if len(scopes) == 0 {
					scopes = command.List{client.ScopeTasksRead, client.ScopeTasksWrite}
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				tc, err := s.Client().CreateToken(ctx, args[0], scopes)
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(tc)
				}
				command.PrintKV(s.IO.Out, []command.KV{
					{"token_id", tc.TokenID},
					{"name", tc.Name},
					{"scopes", strings.Join(tc.Scopes, ",")},
					{"created_at", tc.CreatedAt},
					{"token", tc.Token},
				})
				fmt.Fprintln(s.IO.Err, "Keep the token now: the agent stores only its hash and cannot show it again.")
				return nil
			}
		},
	}
}

// scopesAbout is the help of token create: every scope of
// wire.TokenScopes with what it allows.
func scopesAbout() string {
	var b strings.Builder
	b.WriteString("Scopes:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, sc := range wire.TokenScopes {
		fmt.Fprintf(tw, "  %s\t%s\n", sc.Name, sc.Allows)
	}
	tw.Flush()
	b.WriteString("Without --scope the token gets tasks:read and tasks:write. Needs an admin token.")
	return b.String()
}

func tokenListVerb() *command.Verb {
	return &command.Verb{
		Name: "token list", MaxArgs: 0,
		Summary: "list the API tokens (without their secrets)",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse token list", "synapse token list --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				tokens, err := s.Client().ListTokens(ctx)
				if err != nil {
					return err
				}
				if tokens == nil {
					tokens = []client.TokenInfo{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"tokens": tokens})
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "TOKEN ID\tNAME\tSCOPES\tCREATED")
				for _, t := range tokens {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.TokenID, t.Name, strings.Join(t.Scopes, ","), t.CreatedAt)
				}
				return tw.Flush()
			}
		},
	}
}

func tokenRevokeVerb() *command.Verb {
	return &command.Verb{
		Name: "token revoke", Args: "TOKEN_ID", MinArgs: 1, MaxArgs: 1,
		Summary: "revoke an API token; requests with it are refused from then on",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse token revoke TOKEN_ID"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				if err := s.Client().RevokeToken(ctx, args[0]); err != nil {
					return err
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"token_id": args[0], "revoked": true})
				}
				fmt.Fprintf(s.IO.Out, "revoked token %s\n", args[0])
				return nil
			}
		},
	}
}
