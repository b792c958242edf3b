package admincmd

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/internal/atomicfile"
	"github.com/synapse-edge/synapse/store"
)

// dbFileName is the database file in the data directory.
const dbFileName = "synapse.db"

// probeTimeout bounds the health request that tells whether an agent serves.
const probeTimeout = 2 * time.Second

// defaultBackupTimeout is the default --timeout of db backup.
const defaultBackupTimeout = 10 * time.Minute

// DBVerbs returns the verbs of synapse db; db check of a file runs
// checks, the domains' checks of their records (tier1.CheckRecords), as
// the agent's admin check does.
func DBVerbs(checks ...store.CheckFunc) []*command.Verb {
	return []*command.Verb{dbCheckVerb(checks), dbBackupVerb(), dbStatsVerb(), dbCompactVerb()}
}

const dbAbout = `When an agent answers at --agent the work is done by that agent over its admin
API (an admin token is needed); otherwise, or with --offline, the file
DIR/synapse.db is opened directly, which works only while no agent is
serving it.`

// localAgent is the agent of --data as the db and audit verbs see it:
// serving at --agent, or only a database file.
type localAgent struct {
	s *command.Session
	// other is the agent that answered at --agent when it is not the
	// agent of --data.
	other string
}

// serving reports whether the agent of --data answers at --agent: any
// HTTP answer to the health route counts, a failed connection does not,
// and an agent whose identity key is not the one in DIR/agent.key is
// another agent's (its data directory is not --data): then the file is
// used, and l.other says which agent answered.
func (l *localAgent) serving(ctx context.Context, c *client.Client) bool {
	s := l.s
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := c.Health(ctx)
	var apiErr *client.APIError
	if err != nil && !errors.As(err, &apiErr) {
		return false
	}
	want, ok := dirPublicKey(s.Flags.Data)
	if !ok {
		return true // no key to compare with: trust --agent
	}
	id, err := c.Identity(ctx)
	if err != nil || id.PublicKey == want {
		return true
	}
	l.other = id.AgentID
	return false
}

// dirPublicKey is the base64 public key of the identity key in dir, if
// it can be read.
func dirPublicKey(dir string) (string, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, "agent.key"))
	if err != nil {
		return "", false
	}
	blk, _ := pem.Decode(raw)
	if blk == nil {
		return "", false
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return "", false
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), true
}

// dbFile returns the path of the database file of --data, which must exist.
func (l *localAgent) dbFile() (string, error) {
	s := l.s
	path := filepath.Join(s.Flags.Data, dbFileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no agent answers at %s and there is no database at %s (check --agent and --data)", s.Flags.Agent, path)
		}
		return "", fmt.Errorf("database %s: %w", path, err)
	}
	return path, nil
}

// lockedHint explains store.ErrLocked for the db commands.
func (l *localAgent) lockedHint(err error, offline bool) error {
	s := l.s
	if !errors.Is(err, store.ErrLocked) {
		return err
	}
	switch {
	case offline:
		return fmt.Errorf("%w; an agent is serving it: leave out --offline to work through that agent (at --agent, now %s)", err, s.Flags.Agent)
	case l.other != "":
		return fmt.Errorf("%w; an agent is serving it, but the agent at %s is %s, whose data directory is not %s: pass the address of the agent of %s with --agent", err, s.Flags.Agent, l.other, s.Flags.Data, s.Flags.Data)
	}
	return fmt.Errorf("%w; an agent is serving it but does not answer at %s: pass its address with --agent", err, s.Flags.Agent)
}

// dbCheckResult is the output of db check.
type dbCheckResult struct {
	Source        string   `json:"source"` // "agent" or "file"
	Where         string   `json:"where"`  // the agent URL or the file path
	OK            bool     `json:"ok"`
	Errors        []string `json:"errors"`
	SchemaVersion int      `json:"schema_version"`
	Tasks         int      `json:"tasks"`
}

func dbCheckVerb(checks []store.CheckFunc) *command.Verb {
	return &command.Verb{
		Name: "db check", MaxArgs: 0,
		Summary: "check the database: page structure, buckets, schema version, task records",
		About:   dbAbout + "\n\nThe exit code is 1 when the check finds errors.",
		Agent:   true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse db check",
			"synapse db check --offline --data /var/lib/synapse",
			"synapse db check --agent http://127.0.0.1:9090 --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			offline := fs.Bool("offline", false, "do not ask an agent: open DIR/synapse.db directly")
			return func(ctx context.Context, args []string) error {
				l := &localAgent{s: s}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var res dbCheckResult
				c := s.Client()
				pl := s.StartProgress("db check")
				defer pl.Stop()
				if !*offline && l.serving(ctx, c) {
					dc, err := c.CheckDB(ctx)
					if err != nil {
						return err
					}
					res = dbCheckResult{Source: "agent", Where: s.Flags.Agent, OK: dc.OK, Errors: dc.Errors,
						SchemaVersion: dc.SchemaVersion, Tasks: dc.Tasks}
				} else {
					path, err := l.dbFile()
					if err != nil {
						return err
					}
					rep, err := store.CheckFile(ctx, path, checks...)
					if err != nil {
						return l.lockedHint(err, *offline)
					}
					res = dbCheckResult{Source: "file", Where: path, OK: rep.OK, Errors: rep.Errors,
						SchemaVersion: rep.SchemaVersion, Tasks: rep.Tasks}
				}
				pl.Stop()
				if res.Errors == nil {
					res.Errors = []string{}
				}
				if s.Flags.JSON {
					if err := s.PrintJSON(res); err != nil {
						return err
					}
				} else {
					command.PrintKV(s.IO.Out, []command.KV{
						{"source", res.Source + " " + res.Where},
						{"ok", fmt.Sprint(res.OK)},
						{"schema_version", fmt.Sprint(res.SchemaVersion)},
						{"tasks", fmt.Sprint(res.Tasks)},
					})
					if len(res.Errors) > 0 {
						fmt.Fprintln(s.IO.Out, "errors:")
						for _, e := range res.Errors {
							fmt.Fprintf(s.IO.Out, "  - %s\n", e)
						}
					}
				}
				if !res.OK {
					return &command.ExitError{Code: command.ExitFailure, Msg: fmt.Sprintf("database check found %d error(s)", max(len(res.Errors), 1))}
				}
				return nil
			}
		},
	}
}

// dbBackupResult is the output of db backup.
type dbBackupResult struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	Source string `json:"source"`
	Where  string `json:"where"`
}

func dbBackupVerb() *command.Verb {
	return &command.Verb{
		Name: "db backup", MaxArgs: 0,
		Summary: "write a consistent copy of the database to a file",
		About: dbAbout + `

The copy is written to a temporary file next to --out, synced, and renamed
into place, so --out is never left half-written. A copy made while the agent
runs is consistent: it is one read transaction.`,
		Agent: true, Timeout: defaultBackupTimeout,
		Examples: []string{
			"synapse db backup --out backup/synapse-$(date +%F).db",
			"synapse db backup --offline --data /var/lib/synapse --out /srv/backup/synapse.db",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			out := fs.String("out", "", "write the copy to `FILE` (required)")
			offline := fs.Bool("offline", false, "do not ask an agent: copy DIR/synapse.db directly")
			return func(ctx context.Context, args []string) error {
				if *out == "" {
					return command.UsageErrorf("--out FILE is required")
				}
				l := &localAgent{s: s}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				res := dbBackupResult{Path: *out}
				c := s.Client()
				pl := s.StartProgress("db backup")
				defer pl.Stop()
				if !*offline && l.serving(ctx, c) {
					n, err := backupOverHTTP(ctx, c, *out, pl)
					if err != nil {
						return err
					}
					res.Bytes, res.Source, res.Where = n, "agent", s.Flags.Agent
				} else {
					path, err := l.dbFile()
					if err != nil {
						return err
					}
					if same, _ := samePath(path, *out); same {
						return command.UsageErrorf("--out %s is the database itself", *out)
					}
					n, err := store.BackupFile(ctx, path, *out)
					if err != nil {
						return l.lockedHint(err, *offline)
					}
					res.Bytes, res.Source, res.Where = n, "file", path
				}
				pl.Stop()
				if s.Flags.JSON {
					return s.PrintJSON(res)
				}
				fmt.Fprintf(s.IO.Out, "wrote %d bytes to %s (from %s %s)\n", res.Bytes, res.Path, res.Source, res.Where)
				return nil
			}
		},
	}
}

// backupOverHTTP downloads the agent's backup into a temporary file next to
// out, syncs it and renames it to out.
func backupOverHTTP(ctx context.Context, c *client.Client, out string, pl *command.Progress) (int64, error) {
	f, err := atomicfile.Create(out, 0o600)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer f.Abort()
	n, err := c.Backup(ctx, &countingWriter{w: f, pl: pl})
	if err != nil {
		return n, err
	}
	if err := f.Commit(); err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	return n, nil
}

// samePath reports whether a and b name the same existing file.
func samePath(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

// countingWriter shows the bytes written so far on a progress line.
type countingWriter struct {
	w  io.Writer
	n  int64
	pl *command.Progress
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	cw.pl.Set(fmt.Sprintf("%.1f MB", float64(cw.n)/1e6))
	return n, err
}
