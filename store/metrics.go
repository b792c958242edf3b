package store

import (
	"os"

	"github.com/synapse-edge/synapse/internal/metrics"
)

// RegisterMetrics adds the store's counters (commits, writes, time in
// write transactions, failures, bytes written, fsyncs, the commit log and
// its checkpoints) and the data file's size to r.
func (db *DB) RegisterMetrics(r *metrics.Registry) {
	s := db.Stats()
	r.CounterFunc("synapse_store_commits_total", "Group commits (each one commit-log append, one fsync).", func() float64 { return float64(s.Commits.Load()) })
	r.CounterFunc("synapse_store_writes_total", "Writes committed; writes/commits is the group-commit factor.", func() float64 { return float64(s.Writes.Load()) })
	r.CounterFunc("synapse_store_commit_seconds_total", "Time spent in write transactions, including fsync.", func() float64 { return float64(s.CommitNanos.Load()) / 1e9 })
	r.GaugeFunc("synapse_store_size_bytes", "Size of the data file.", func() float64 {
		fi, err := os.Stat(db.Path())
		if err != nil {
			return 0
		}
		return float64(fi.Size())
	})
	r.CounterFunc("synapse_store_failed_commits_total", "Write transactions that failed.", func() float64 { return float64(s.FailedCommits.Load()) })
	r.CounterFunc("synapse_store_bytes_written_total", "Bytes the store wrote: commit-log records and the data file's checkpointed pages.", func() float64 { return float64(s.BytesWritten()) })
	r.CounterFunc("synapse_store_fsyncs_total", "fsyncs the store asked for: one per group commit (and new log segment), two per checkpoint.", func() float64 { return float64(s.Fsyncs()) })
	r.CounterFunc("synapse_store_log_bytes_total", "Bytes appended to the commit log.", func() float64 { return float64(s.LogBytes.Load()) })
	r.GaugeFunc("synapse_store_log_pending_bytes", "Bytes of commit log not checkpointed yet (held in memory, replayed at a restart).", func() float64 {
		return float64(s.LogBytes.Load() - s.LogAtCheckpoint.Load())
	})
	r.CounterFunc("synapse_store_checkpoints_total", "Checkpoints: the commit log's writes applied to the data file in one synced commit.", func() float64 { return float64(s.Checkpoints.Load()) })
	r.CounterFunc("synapse_store_checkpoint_seconds_total", "Time spent in checkpoints.", func() float64 { return float64(s.CheckpointNanos.Load()) / 1e9 })
	r.CounterFunc("synapse_store_failed_checkpoints_total", "Checkpoints that failed (the log keeps their writes; retried).", func() float64 { return float64(s.FailedCheckpoints.Load()) })
	r.GaugeFunc("synapse_store_items_per_fsync", "Writes acknowledged per log fsync since start.", func() float64 {
		if n := s.LogSyncs.Load(); n > 0 {
			return float64(s.Writes.Load()) / float64(n)
		}
		return 0
	})
	r.GaugeFunc("synapse_store_bytes_per_write", "Bytes written per acknowledged write since start.", func() float64 {
		if n := s.Writes.Load(); n > 0 {
			return float64(s.BytesWritten()) / float64(n)
		}
		return 0
	})
}
