package admincmd

import (
	"context"
	"flag"
	"fmt"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/store"
)

// dbStatsResult is the output of db stats. The counters are since the
// agent started; a file opened offline has only its log's state.
type dbStatsResult struct {
	Source string `json:"source"`
	Where  string `json:"where"`
	// Writes are the acknowledged writes (each one caller's store
	// write: a task change, a tier-1 batch), Commits the group commits
	// that held them.
	Writes  uint64 `json:"writes,omitempty"`
	Commits uint64 `json:"commits,omitempty"`
	// BytesWritten are the commit log's bytes and the checkpoints' pages.
	BytesWritten   uint64  `json:"bytes_written,omitempty"`
	BytesPerWrite  float64 `json:"bytes_per_write,omitempty"`
	Fsyncs         uint64  `json:"fsyncs,omitempty"`
	FsyncsPerWrite float64 `json:"fsyncs_per_write,omitempty"`
	WritesPerFsync float64 `json:"writes_per_fsync,omitempty"`
	LogBytes       uint64  `json:"log_bytes,omitempty"`
	Checkpoints    uint64  `json:"checkpoints,omitempty"`
	// CheckpointMS is the mean checkpoint's duration.
	CheckpointMS float64 `json:"checkpoint_ms,omitempty"`
	FileBytes    uint64  `json:"file_bytes,omitempty"`
	// LogPendingBytes is the log not checkpointed yet (agent); Log what
	// the log holds (file) and LogBeyond its records after the file's
	// checkpoint, which the next open replays.
	LogPendingBytes *uint64          `json:"log_pending_bytes,omitempty"`
	Log             *store.LogReport `json:"log,omitempty"`
	LogBeyond       *uint64          `json:"log_records_beyond_checkpoint,omitempty"`
	Errors          []string         `json:"errors,omitempty"`
}

func dbStatsVerb() *command.Verb {
	return &command.Verb{
		Name: "db stats", MaxArgs: 0,
		Summary: "what the store has written per acknowledged write since the agent started, and its commit log",
		About: `Asks the agent at --agent for its store counters (GET /metrics, metrics
scope): acknowledged writes, group commits, bytes written (commit-log
records and checkpointed pages) and fsyncs, each per write, writes per
fsync, checkpoints and their mean duration, the commit log not yet
checkpointed. When no agent answers, or with --offline, it reads the file
DIR/synapse.db and its log instead: the records the log holds beyond the
file's checkpoint (the counters exist only in a running agent).`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse db stats",
			"synapse db stats --json",
			"synapse db stats --offline --data /var/lib/synapse",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			offline := fs.Bool("offline", false, "do not ask an agent: read DIR/synapse.db and its commit log")
			return func(ctx context.Context, args []string) error {
				l := &localAgent{s: s}
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				var res dbStatsResult
				c := s.Client()
				if !*offline && l.serving(ctx, c) {
					m, err := c.Metrics(ctx)
					if err != nil {
						return err
					}
					res = statsFromMetrics(m)
					res.Source, res.Where = "agent", s.Flags.Agent
				} else {
					path, err := l.dbFile()
					if err != nil {
						return err
					}
					lr, errs, err := store.LogStateFile(path)
					if err != nil {
						return l.lockedHint(err, *offline)
					}
					beyond := lr.Last - min(lr.Checkpoint, lr.Last)
					res = dbStatsResult{Source: "file", Where: path, Log: &lr, LogBeyond: &beyond, Errors: errs}
				}
				if s.Flags.JSON {
					return s.PrintJSON(res)
				}
				kv := []command.KV{{"source", res.Source + " " + res.Where}}
				if res.Source == "agent" {
					kv = append(kv,
						command.KV{"writes", fmt.Sprint(res.Writes)},
						command.KV{"group commits", fmt.Sprint(res.Commits)},
						command.KV{"bytes written", fmt.Sprint(res.BytesWritten)},
						command.KV{"bytes per write", fmt.Sprintf("%.0f", res.BytesPerWrite)},
						command.KV{"fsyncs", fmt.Sprint(res.Fsyncs)},
						command.KV{"fsyncs per write", fmt.Sprintf("%.2f", res.FsyncsPerWrite)},
						command.KV{"writes per fsync", fmt.Sprintf("%.2f", res.WritesPerFsync)},
						command.KV{"log bytes", fmt.Sprint(res.LogBytes)},
						command.KV{"log not checkpointed", fmt.Sprintf("%d bytes", *res.LogPendingBytes)},
						command.KV{"checkpoints", fmt.Sprintf("%d (mean %.2f ms)", res.Checkpoints, res.CheckpointMS)},
						command.KV{"file bytes", fmt.Sprint(res.FileBytes)})
				} else {
					kv = append(kv,
						command.KV{"checkpoint", fmt.Sprintf("log record %d", res.Log.Checkpoint)},
						command.KV{"log", fmt.Sprintf("%d segment(s), records %d to %d, %d beyond the checkpoint", res.Log.Segments, res.Log.First, res.Log.Last, *res.LogBeyond)})
					if res.Log.TornBytes > 0 {
						kv = append(kv, command.KV{"torn tail", fmt.Sprintf("%d bytes (cut off at the next open)", res.Log.TornBytes)})
					}
				}
				command.PrintKV(s.IO.Out, kv)
				for _, e := range res.Errors {
					fmt.Fprintf(s.IO.Out, "error: %s\n", e)
				}
				if len(res.Errors) > 0 {
					return &command.ExitError{Code: command.ExitFailure, Msg: fmt.Sprintf("the commit log has %d error(s): run synapse db check", len(res.Errors))}
				}
				return nil
			}
		},
	}
}

// statsFromMetrics reads the store's counters of an agent's /metrics.
func statsFromMetrics(m map[string]float64) dbStatsResult {
	u := func(name string) uint64 { return uint64(m["synapse_store_"+name]) }
	r := dbStatsResult{
		Writes: u("writes_total"), Commits: u("commits_total"), BytesWritten: u("bytes_written_total"),
		Fsyncs: u("fsyncs_total"), LogBytes: u("log_bytes_total"), Checkpoints: u("checkpoints_total"),
		FileBytes: u("size_bytes"),
	}
	pending := u("log_pending_bytes")
	r.LogPendingBytes = &pending
	if r.Writes > 0 {
		r.BytesPerWrite = float64(r.BytesWritten) / float64(r.Writes)
		r.FsyncsPerWrite = float64(r.Fsyncs) / float64(r.Writes)
	}
	if r.Fsyncs > 0 {
		r.WritesPerFsync = float64(r.Writes) / float64(r.Fsyncs)
	}
	if r.Checkpoints > 0 {
		r.CheckpointMS = m["synapse_store_checkpoint_seconds_total"] * 1000 / float64(r.Checkpoints)
	}
	return r
}
