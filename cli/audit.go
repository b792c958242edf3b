package cli

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/store"
)

const auditAbout = `The audit log holds the agent's security events (contracts made and
revoked, payloads decrypted, decryption and signature failures). It is
append-only and hash-chained: every record carries the hash of the one
before it, so editing, inserting or reordering a stored record breaks the
chain, and "audit verify" says where.`

func auditVerbs() []*verb {
	return []*verb{auditListVerb(), auditVerifyVerb()}
}

func auditListVerb() *verb {
	return &verb{
		name: "audit list", maxArgs: 0,
		summary: "list the security events of the audit log (admin)",
		about:   auditAbout,
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse audit list", "synapse audit list --after 120 --limit 50 --json"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			after := fs.Uint64("after", 0, "list records after this sequence number")
			limit := fs.Int("limit", 100, "at most this many records (1-1000)")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				recs, err := s.client().AuditLog(ctx, *after, *limit)
				if err != nil {
					return err
				}
				if s.g.json {
					if recs == nil {
						recs = []client.AuditRecord{}
					}
					return s.printJSON(recs)
				}
				w := tabwriter.NewWriter(s.io.Out, 0, 4, 2, ' ', 0)
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

func auditVerifyVerb() *verb {
	return &verb{
		name: "audit verify", maxArgs: 0,
		summary: "check the audit log's hash chain (exit 1 if a record was altered)",
		about:   auditAbout + "\n\nWith --offline, or when no agent answers, DIR/synapse.db is read directly.",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{"synapse audit verify", "synapse audit verify --offline --data /var/lib/synapse"},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			offline := fs.Bool("offline", false, "do not ask an agent: open DIR/synapse.db directly")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var rep client.AuditReport
				where := s.g.agent
				if c := s.client(); !*offline && s.agentServing(ctx, c) {
					r, err := c.VerifyAudit(ctx)
					if err != nil {
						return err
					}
					rep = *r
				} else {
					path, err := s.localDB()
					if err != nil {
						return err
					}
					r, err := store.VerifyAuditFile(ctx, path)
					if err != nil {
						return s.lockedHint(err, *offline)
					}
					where = path
					rep = client.AuditReport{OK: r.OK, Records: r.Records, BadSeq: r.BadSeq, Problem: r.Problem, Last: r.Last}
				}
				if s.g.json {
					if err := s.printJSON(rep); err != nil {
						return err
					}
				} else {
					printKV(s.io.Out, []kv{{"source", where}, {"ok", fmt.Sprint(rep.OK)}, {"records", fmt.Sprint(rep.Records)},
						{"last_hash", rep.Last}})
					if !rep.OK {
						fmt.Fprintf(s.io.Out, "first bad record: %d: %s\n", rep.BadSeq, rep.Problem)
					}
				}
				if !rep.OK {
					return &exitError{code: ExitFailure, msg: fmt.Sprintf("audit chain broken at record %d: %s", rep.BadSeq, rep.Problem)}
				}
				return nil
			}
		},
	}
}
