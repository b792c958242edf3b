package store

import (
	"os"

	"github.com/synapse-edge/synapse/internal/metrics"
)

// RegisterMetrics adds the store's counters (commits, writes, time in
// write transactions, failures) and the data file's size to r.
func (db *DB) RegisterMetrics(r *metrics.Registry) {
	s := db.Stats()
	r.CounterFunc("synapse_store_commits_total", "Write transactions committed (each one fsync).", func() float64 { return float64(s.Commits.Load()) })
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
}
