package admincmd

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/agent/auditdb"
	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
)

const auditAbout = `The audit log holds the agent's security events (contracts made and
revoked, payloads decrypted, decryption and signature failures). It is
append-only and hash-chained: every record carries the hash of the one
before it, so editing, inserting or reordering a stored record breaks the
chain, and "audit verify" says where.`

// AuditVerbs returns the verbs of synapse audit.
func AuditVerbs() []*command.Verb {
	return []*command.Verb{auditListVerb(), auditVerifyVerb()}
}

func auditListVerb() *command.Verb {
	return &command.Verb{
		Name: "audit list", MaxArgs: 0,
		Summary: "list the security events of the audit log (admin)",
		About:   auditAbout,
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse audit list", "synapse audit list --after 120 --limit 50 --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			after := fs.Uint64("after", 0, "list records after this sequence number")
			limit := fs.Int("limit", 100, "at most this many records (1-1000)")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				recs, err := s.Client().AuditLog(ctx, *after, *limit)
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					if recs == nil {
						recs = []client.AuditRecord{}
					}
					return s.PrintJSON(recs)
				}
				w := tabwriter.NewWriter(s.IO.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "SEQ\tAT\tKIND\tPEER\tDETAIL")
				for _, r := range recs {
					var d []string
					for _, k := range slices.Sorted(maps.Keys(r.Detail)) { // a stable order
						d = append(d, fmt.Sprintf("%s=%v", k, r.Detail[k]))
					}
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", r.Seq, r.At.Format("2006-01-02T15:04:05Z"), r.Kind, r.Peer, strings.Join(d, " "))
				}
				return w.Flush()
			}
		},
	}
}

func auditVerifyVerb() *command.Verb {
	return &command.Verb{
		Name: "audit verify", MaxArgs: 0,
		Summary: "check the audit log's hash chain (exit 1 if a record was altered)",
		About:   auditAbout + "\n\nWith --offline, or when no agent answers, DIR/synapse.db is read directly.",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse audit verify", "synapse audit verify --offline --data /var/lib/synapse"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			offline := fs.Bool("offline", false, "do not ask an agent: open DIR/synapse.db directly")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var rep client.AuditReport
				l, where := &localAgent{s: s}, s.Flags.Agent
				if c := s.Client(); !*offline && l.serving(ctx, c) {
					r, err := c.VerifyAudit(ctx)
					if err != nil {
						return err
					}
					rep = *r
				} else {
					path, err := l.dbFile()
					if err != nil {
						return err
					}
					r, err := auditdb.VerifyFile(ctx, path)
					if err != nil {
						return l.lockedHint(err, *offline)
					}
					where = path
					rep = client.AuditReport{OK: r.OK, Records: r.Records, BadSeq: r.BadSeq, Problem: r.Problem, Last: r.Last}
				}
				if s.Flags.JSON {
					if err := s.PrintJSON(rep); err != nil {
						return err
					}
				} else {
					command.PrintKV(s.IO.Out, []command.KV{{"source", where}, {"ok", fmt.Sprint(rep.OK)}, {"records", fmt.Sprint(rep.Records)},
						{"last_hash", rep.Last}})
					if !rep.OK {
						fmt.Fprintf(s.IO.Out, "first bad record: %d: %s\n", rep.BadSeq, rep.Problem)
					}
				}
				if !rep.OK {
					return &command.ExitError{Code: command.ExitFailure, Msg: fmt.Sprintf("audit chain broken at record %d: %s", rep.BadSeq, rep.Problem)}
				}
				return nil
			}
		},
	}
}
