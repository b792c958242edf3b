package admincmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/compact"
)

// dbCompactResult is the output of db compact.
type dbCompactResult struct {
	Path        string `json:"path"`
	BytesBefore int64  `json:"bytes_before"`
	BytesAfter  int64  `json:"bytes_after"`
	Records     int64  `json:"records"`
	Millis      int64  `json:"ms"`
}

func dbCompactVerb() *command.Verb {
	return &command.Verb{
		Name: "db compact", MaxArgs: 0,
		Summary: "rewrite a stopped agent's database file to the size its records take",
		About: `The file keeps its largest size: pages freed by retention are reused, never
given back. db compact copies DIR/synapse.db into a new file that holds the
same records in as few pages as they need, syncs it and renames it over the
old one. Stop the agent first: while an agent serves the file, db compact
refuses it. An interrupted compaction (kill, power cut) leaves the old file
whole, or the new one; a copy it left behind is removed by the next run.`,
		Agent: true, Timeout: defaultBackupTimeout,
		Examples: []string{
			"synapse db compact --data /var/lib/synapse",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				l := &localAgent{s: s}
				path, err := l.dbFile()
				if err != nil {
					return err
				}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				pl := s.StartProgress("db compact")
				defer pl.Stop()
				res, err := compact.File(ctx, path, compact.Options{Progress: func(done, total int64) {
					pl.Set(progressBar(done, total))
				}})
				if errors.Is(err, store.ErrLocked) {
					return fmt.Errorf("%w: an agent is serving %s; stop it first (db compact rewrites a stopped agent's file)", err, path)
				}
				if err != nil {
					return err
				}
				pl.Stop()
				out := dbCompactResult{Path: path, BytesBefore: res.Before, BytesAfter: res.After, Records: res.Keys, Millis: res.Took.Milliseconds()}
				if s.Flags.JSON {
					return s.PrintJSON(out)
				}
				fmt.Fprintf(s.IO.Out, "compacted %s: %.1f MB -> %.1f MB (%d records, %.1f s)\n", path,
					float64(res.Before)/1e6, float64(res.After)/1e6, res.Keys, res.Took.Seconds())
				return nil
			}
		},
	}
}

// progressBar draws done of total as a bar of 20 cells and a percentage.
func progressBar(done, total int64) string {
	if total <= 0 {
		return ""
	}
	pct := min(done*100/total, 100)
	cells := int(pct / 5)
	return fmt.Sprintf("[%s%s] %d%% (%d of %d records)", strings.Repeat("#", cells), strings.Repeat(".", 20-cells), pct, done, total)
}
