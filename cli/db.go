package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/synapse-edge/synapse/client"
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

// agentServing reports whether an agent answers at --agent: any HTTP
// answer to the health route counts, a failed connection does not.
func (s *session) agentServing(ctx context.Context, c *client.Client) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, err := c.Health(ctx)
	var apiErr *client.APIError
	return err == nil || errors.As(err, &apiErr)
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
func (s *session) lockedHint(err error) error {
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("%w; an agent is serving it but does not answer at %s: pass its address with --agent", err, s.g.agent)
	}
	return err
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
						return s.lockedHint(err)
					}
					res = dbCheckResult{Source: "file", Where: path, OK: rep.OK, Errors: rep.Errors,
						SchemaVersion: rep.SchemaVersion, Tasks: rep.Tasks}
				}
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
				if !*offline && s.agentServing(ctx, c) {
					n, err := backupOverHTTP(ctx, c, *out)
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
						return s.lockedHint(err)
					}
					res.Bytes, res.Source, res.Where = n, "file", path
				}
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
func backupOverHTTP(ctx context.Context, c *client.Client, out string) (n int64, err error) {
	dir := filepath.Dir(out)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if n, err = c.Backup(ctx, tmp); err != nil {
		return n, err
	}
	if err = tmp.Sync(); err != nil {
		return n, fmt.Errorf("backup: sync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return n, fmt.Errorf("backup: close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), out); err != nil {
		return n, fmt.Errorf("backup: %w", err)
	}
	syncDir(dir)
	return n, nil
}

// syncDir makes a rename in dir durable where the platform allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
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
