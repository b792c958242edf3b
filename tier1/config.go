package tier1

import (
	"fmt"
	"strings"
	"time"
)

// Config is the "tier1" section of the agent's configuration: the user's
// routines and how tier-1 frames are stored (SPEC §8).
type Config struct {
	// Routines are the user's routines, in addition to the built-in
	// synapse.telemetry 1.0.0.
	Routines []Descriptor `json:"routines,omitempty"`
	// MaxBatchBytes bounds one batch (HTTP body or WebSocket message).
	// Default 4 MiB.
	MaxBatchBytes int `json:"max_batch_bytes,omitempty"`
	// MaxInflightBytes bounds the memory of the decoded batches waiting
	// for the disk (each counted at its decoded cost); senders wait
	// beyond it. A batch larger than the whole budget waits until nothing
	// else is in flight. The command derives it from limits.memory_mb
	// when the file does not set it (package internal/memlimit); the
	// default here, for programs that embed the agent, is 16 MiB.
	MaxInflightBytes int64 `json:"max_inflight_bytes,omitempty"`
	// RetentionHours drops frames older than this (by their ts). Default
	// 720 (30 days).
	RetentionHours int `json:"retention_hours,omitempty"`
	// MaxBytesPerRoutine drops a routine's oldest frames beyond this size.
	// Default 1 GiB.
	MaxBytesPerRoutine int64 `json:"max_bytes_per_routine,omitempty"`
	// MaxDiskBytes bounds the bytes of all routines' stored frames
	// together (keys and blocks, the "bytes" of GET /tier1/routines); 0,
	// the default, sets no bound. See disk.go for how the limits combine.
	MaxDiskBytes int64 `json:"max_disk_bytes,omitempty"`
	// MinFreeBytes is a floor of free space on the filesystem of the data
	// file: below it, tier-1 data stops growing. 0, the default, sets none.
	MinFreeBytes int64 `json:"min_free_bytes,omitempty"`
	// Quotas set a routine's own byte limit and overflow policy; a routine
	// without one has MaxBytesPerRoutine and drop_oldest.
	Quotas []Quota `json:"quotas,omitempty"`
	// ExportBandwidthBytesPerS caps the bytes all exports together put on
	// the wire per second (package tier1/export); 0: no cap.
	ExportBandwidthBytesPerS int64 `json:"export_bandwidth_bytes_per_s,omitempty"`
}

// Quota is one entry of tier1.quotas.
type Quota struct {
	// Routine is the capability_id the quota is for.
	Routine string `json:"routine"`
	// MaxBytes bounds the routine's stored frames; 0 keeps
	// max_bytes_per_routine.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// Overflow is what happens when a batch does not fit: OverflowDropOldest
	// (the default) or OverflowRejectNew.
	Overflow string `json:"overflow,omitempty"`
}

// The overflow policies of a Quota.
const (
	// OverflowDropOldest stores the new batch and drops the routine's
	// oldest frames to make room.
	OverflowDropOldest = "drop_oldest"
	// OverflowRejectNew refuses the batch (storage_quota_exceeded, 507,
	// retriable) and keeps what is stored.
	OverflowRejectNew = "reject_new"
)

// MinInflightBytes is the least max_inflight_bytes.
const MinInflightBytes = 64 << 10

// DefaultConfig is the tier1 section when nothing is set.
func DefaultConfig() Config {
	return Config{MaxBatchBytes: 4 << 20, MaxInflightBytes: 16 << 20, RetentionHours: 720, MaxBytesPerRoutine: 1 << 30}
}

// Retention is retention_hours as a duration.
func (c *Config) Retention() time.Duration { return time.Duration(c.RetentionHours) * time.Hour }

// Check reports every bad field through bad, named relative to the
// section ("max_batch_bytes", "routines[0]").
func (c *Config) Check(bad func(field, format string, args ...any)) {
	if c.MaxBatchBytes < 1 {
		bad("max_batch_bytes", "must be at least 1")
	}
	if c.MaxInflightBytes < MinInflightBytes {
		bad("max_inflight_bytes", "must be at least %d (64 KiB)", MinInflightBytes)
	}
	if c.RetentionHours < 1 {
		bad("retention_hours", "must be at least 1")
	}
	if c.MaxBytesPerRoutine < 1 {
		bad("max_bytes_per_routine", "must be at least 1")
	}
	for i := range c.Routines {
		if err := c.Routines[i].Validate(); err != nil {
			bad(fmt.Sprintf("routines[%d]", i), "%v", err)
		}
	}
	c.checkDisk(bad)
}

// checkDisk reports bad max_disk_bytes, min_free_bytes and quotas.
func (c *Config) checkDisk(bad func(field, format string, args ...any)) {
	if c.MaxDiskBytes < 0 {
		bad("max_disk_bytes", "must not be negative (0: no bound)")
	} else if c.MaxDiskBytes > 0 && c.MaxDiskBytes < int64(c.MaxBatchBytes) {
		bad("max_disk_bytes", "%d is less than tier1.max_batch_bytes (%d): a batch could never fit", c.MaxDiskBytes, c.MaxBatchBytes)
	}
	if c.MinFreeBytes < 0 {
		bad("min_free_bytes", "must not be negative (0: no floor)")
	}
	known := map[string]bool{Telemetry().CapabilityID: true}
	for _, d := range c.Routines {
		known[d.CapabilityID] = true
	}
	seen := map[string]int{}
	for i, q := range c.Quotas {
		f := fmt.Sprintf("quotas[%d]", i)
		switch j, dup := seen[q.Routine]; {
		case q.Routine == "":
			bad(f+".routine", "must name a routine")
		case !known[q.Routine]:
			bad(f+".routine", "no routine %q (neither built in nor in tier1.routines)", q.Routine)
		case dup:
			bad(f+".routine", "%q has a quota already (quotas[%d])", q.Routine, j)
		}
		seen[q.Routine] = i
		if q.MaxBytes < 0 {
			bad(f+".max_bytes", "must not be negative (0: tier1.max_bytes_per_routine)")
		} else if c.MaxDiskBytes > 0 && q.MaxBytes > c.MaxDiskBytes {
			bad(f+".max_bytes", "%d is more than tier1.max_disk_bytes (%d): the routine could never hold it", q.MaxBytes, c.MaxDiskBytes)
		}
		if q.Overflow != "" && q.Overflow != OverflowDropOldest && q.Overflow != OverflowRejectNew {
			bad(f+".overflow", "%q: want %q (the default) or %q", q.Overflow, OverflowDropOldest, OverflowRejectNew)
		}
	}
}

// quota is the byte limit and policy of routine id.
func (c *Config) quota(id string) (limit int64, reject bool) {
	limit = c.MaxBytesPerRoutine
	for _, q := range c.Quotas {
		if q.Routine == id {
			if q.MaxBytes > 0 {
				limit = q.MaxBytes
			}
			return limit, q.Overflow == OverflowRejectNew
		}
	}
	return limit, false
}

// UplinkConfig is the "uplink" section: the upstream agent stored
// frames are forwarded to (Uplink).
type UplinkConfig struct {
	// Endpoint is the upstream agent's base URL, e.g. http://10.0.0.2:8080
	// (a POST per batch), or ws://10.0.0.2:8080 (its WebSocket stream, a
	// window of batches in flight); or mqtt://, the MQTT broker's.
	Endpoint string `json:"endpoint"`
	// TokenEnv names the environment variable holding the bearer token for
	// the upstream (a token with the tier1:write scope there).
	TokenEnv string `json:"token_env,omitempty"`
	// Token is read from TokenEnv at start; never from the file.
	Token string `json:"-"`
	// MaxBackoffMS caps the wait between attempts while the upstream is
	// unreachable. Default 30000.
	MaxBackoffMS int `json:"max_backoff_ms,omitempty"`
}

// Check reports a bad endpoint through bad, named relative to the section;
// u may be nil. An endpoint mqtt... is the MQTT wire's to check.
func (u *UplinkConfig) Check(bad func(field, format string, args ...any)) {
	if u == nil || strings.HasPrefix(u.Endpoint, "mqtt") {
		return
	}
	if !strings.HasPrefix(u.Endpoint, "http://") && !strings.HasPrefix(u.Endpoint, "https://") &&
		!strings.HasPrefix(u.Endpoint, "ws://") && !strings.HasPrefix(u.Endpoint, "wss://") {
		bad("endpoint", "%q must be an http://, https://, ws:// or wss:// URL", u.Endpoint)
	}
}
