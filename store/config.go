package store

import "time"

// Config is the config file's "store" section: how much may wait in the
// commit log before a checkpoint writes it into the data file (Options'
// CheckpointInterval and CheckpointBytes). What waits is also held in
// memory and replayed at a restart; each checkpoint is one synced bbolt
// commit, which rewrites every page the writes since the last one touched.
type Config struct {
	// CheckpointIntervalMS is how often a checkpoint runs under load
	// (under a light load, every ten of these). Default 1000.
	CheckpointIntervalMS int `json:"checkpoint_interval_ms,omitempty"`
	// CheckpointLogBytes starts a checkpoint once the log has grown by
	// this much since the last. Default 1048576 (1 MiB).
	CheckpointLogBytes int64 `json:"checkpoint_log_bytes,omitempty"`
}

// The bounds Check holds the section to. Past a minute or 64 MiB the
// replay after a crash and the memory held by what waits grow for no
// saving worth having (bench/README: 16 MiB saved 2 of 52 bytes a frame).
const (
	minCheckpointMS, maxCheckpointMS   = 10, 60_000
	minCheckpointLog, maxCheckpointLog = 64 << 10, 64 << 20
)

// DefaultConfig is the section when the file does not set it: Options'
// defaults.
func DefaultConfig() Config {
	return Config{CheckpointIntervalMS: 1000, CheckpointLogBytes: 1 << 20}
}

// Check reports every bad field through bad, named relative to the
// section ("checkpoint_interval_ms").
func (c Config) Check(bad func(field, format string, args ...any)) {
	if ms := c.CheckpointIntervalMS; ms < minCheckpointMS || ms > maxCheckpointMS {
		bad("checkpoint_interval_ms", "%d is outside %d..%d", ms, minCheckpointMS, maxCheckpointMS)
	}
	if n := c.CheckpointLogBytes; n < minCheckpointLog || n > maxCheckpointLog {
		bad("checkpoint_log_bytes", "%d is outside %d..%d", n, minCheckpointLog, maxCheckpointLog)
	}
}

// Options are the store's options the section sets; the caller adds the
// rest (a logger, fault seams).
func (c Config) Options() Options {
	return Options{CheckpointInterval: time.Duration(c.CheckpointIntervalMS) * time.Millisecond, CheckpointBytes: c.CheckpointLogBytes}
}
