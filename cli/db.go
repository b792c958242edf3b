package cli

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

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/internal/atomicfile"
	"github.com/synapse-edge/synapse/store"
)

// dbFile is the database file in the data directory.
const dbFile = "synapse.db"

// probeTimeout bounds the health request that tells whether an agent serves.
const probeTimeout = 2 * time.Second

// defaultBackupTimeout is the default --timeout of db backup.
const defaultBackupTimeout = 10 * time.Minute

func dbVerbs() []*verb { return []*verb{dbCheckVerb(), dbBackupVerb()} }

const dbAbout = `When an agent answers at --agent the work is done by that agent over its admin
API (an admin token is needed); otherwise, or with --offline, the file
DIR/synapse.db is opened directly, which works only while no agent is
serving it.`

// agentServing reports whether the agent of --data answers at --agent:
// any HTTP answer to the health route counts, a failed connection does
// not, and an agent whose identity key is not the one in DIR/agent.key is
// another agent's (its data directory is not --data): then the file is
// used, and s.other says which agent answered.
func (s *session) agentServing(ctx context.Context, c *client.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := c.Health(ctx)
	var apiErr *client.APIError
	if err != nil && !errors.As(err, &apiErr) {
		return false
	}
	want, ok := dirPublicKey(s.g.data)
	if !ok {
		return true // no key to compare with: trust --agent
	}
	id, err := c.Identity(ctx)
	if err != nil || id.PublicKey == want {
		return true
	}
	s.other = id.AgentID
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

// localDB returns the path of the database file of --data, which must exist.
func (s *session) localDB() (string, error) {
	path := filepath.Join(s.g.data, dbFile)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no agent answers at %s and there is no database at %s (check --agent and --data)", s.g.agent, path)
		}
		return "", fmt.Errorf("database %s: %w", path, err)
	}
	return path, nil
}

// lockedHint explains store.ErrLocked for the db commands.
func (s *session) lockedHint(err error, offline bool) error {
	if !errors.Is(err, store.ErrLocked) {
		return err
	}
	switch {
	case offline:
		return fmt.Errorf("%w; an agent is serving it: leave out --offline to work through that agent (at --agent, now %s)", err, s.g.agent)
	case s.other != "":
		return fmt.Errorf("%w; an agent is serving it, but the agent at %s is %s, whose data directory is not %s: pass the address of the agent of %s with --agent", err, s.g.agent, s.other, s.g.data, s.g.data)
	}
	return fmt.Errorf("%w; an agent is serving it but does not answer at %s: pass its address with --agent", err, s.g.agent)
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

func dbCheckVerb() *verb {
	return &verb{
		name: "db check", maxArgs: 0,
		summary: "check the database: page structure, buckets, schema version, task records",
		about:   dbAbout + "\n\nThe exit code is 1 when the check finds errors.",
		agent:   true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse db check",
			"synapse db check --offline --data /var/lib/synapse",
			"synapse db check --agent http://127.0.0.1:9090 --json",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			offline := fs.Bool("offline", false, "do not ask an agent: open DIR/synapse.db directly")
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				var res dbCheckResult
				c := s.client()
				pl := startProgress(s, "db check")
				defer pl.stop()
				if !*offline && s.agentServing(ctx, c) {
					dc, err := c.CheckDB(ctx)
					if err != nil {
						return err
					}
					res = dbCheckResult{Source: "agent", Where: s.g.agent, OK: dc.OK, Errors: dc.Errors,
						SchemaVersion: dc.SchemaVersion, Tasks: dc.Tasks}
				} else {
					path, err := s.localDB()
					if err != nil {
						return err
					}
					rep, err := store.CheckFile(ctx, path)
					if err != nil {
						return s.lockedHint(err, *offline)
					}
					res = dbCheckResult{Source: "file", Where: path, OK: rep.OK, Errors: rep.Errors,
						SchemaVersion: rep.SchemaVersion, Tasks: rep.Tasks}
				}
				pl.stop()
				if res.Errors == nil {
					res.Errors = []string{}
				}
				if s.g.json {
					if err := s.printJSON(res); err != nil {
						return err
					}
				} else {
					printKV(s.io.Out, []kv{
						{"source", res.Source + " " + res.Where},
						{"ok", fmt.Sprint(res.OK)},
						{"schema_version", fmt.Sprint(res.SchemaVersion)},
						{"tasks", fmt.Sprint(res.Tasks)},
					})
					if len(res.Errors) > 0 {
						fmt.Fprintln(s.io.Out, "errors:")
						for _, e := range res.Errors {
							fmt.Fprintf(s.io.Out, "  - %s\n", e)
						}
					}
				}
				if !res.OK {
					return &exitError{code: ExitFailure, msg: fmt.Sprintf("database check found %d error(s)", max(len(res.Errors), 1))}
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

func dbBackupVerb() *verb {
	return &verb{
		name: "db backup", maxArgs: 0,
		summary: "write a consistent copy of the database to a file",
		about: dbAbout + `

The copy is written to a temporary file next to --out, synced, and renamed
into place, so --out is never left half-written. A copy made while the agent
runs is consistent: it is one read transaction.`,
		agent: true, timeout: defaultBackupTimeout,
		examples: []string{
			"synapse db backup --out backup/synapse-$(date +%F).db",
			"synapse db backup --offline --data /var/lib/synapse --out /srv/backup/synapse.db",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			out := fs.String("out", "", "write the copy to `FILE` (required)")
			offline := fs.Bool("offline", false, "do not ask an agent: copy DIR/synapse.db directly")
			return func(ctx context.Context, args []string) error {
				if *out == "" {
					return usageErrorf("--out FILE is required")
				}
				ctx, cancel := s.withTimeout(ctx)
				defer cancel()
				res := dbBackupResult{Path: *out}
				c := s.client()
				pl := startProgress(s, "db backup")
				defer pl.stop()
				if !*offline && s.agentServing(ctx, c) {
					n, err := backupOverHTTP(ctx, c, *out, pl)
					if err != nil {
						return err
					}
					res.Bytes, res.Source, res.Where = n, "agent", s.g.agent
				} else {
					path, err := s.localDB()
					if err != nil {
						return err
					}
					if same, _ := samePath(path, *out); same {
						return usageErrorf("--out %s is the database itself", *out)
					}
					n, err := store.BackupFile(ctx, path, *out)
					if err != nil {
						return s.lockedHint(err, *offline)
					}
					res.Bytes, res.Source, res.Where = n, "file", path
				}
				pl.stop()
				if s.g.json {
					return s.printJSON(res)
				}
				fmt.Fprintf(s.io.Out, "wrote %d bytes to %s (from %s %s)\n", res.Bytes, res.Path, res.Source, res.Where)
				return nil
			}
		},
	}
}

// backupOverHTTP downloads the agent's backup into a temporary file next to
// out, syncs it and renames it to out.
func backupOverHTTP(ctx context.Context, c *client.Client, out string, pl *progress) (int64, error) {
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
	pl *progress
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	cw.pl.set(fmt.Sprintf("%.1f MB", float64(cw.n)/1e6))
	return n, err
}
