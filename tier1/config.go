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
	// MaxInflightBytes bounds batch bytes waiting for the disk; senders
	// wait beyond it. Default 16 MiB (decoded, a batch takes about 2.5
	// times its size in memory).
	MaxInflightBytes int64 `json:"max_inflight_bytes,omitempty"`
	// RetentionHours drops frames older than this (by their ts). Default
	// 720 (30 days).
	RetentionHours int `json:"retention_hours,omitempty"`
	// MaxBytesPerRoutine drops a routine's oldest frames beyond this size.
	// Default 1 GiB.
	MaxBytesPerRoutine int64 `json:"max_bytes_per_routine,omitempty"`
	// ExportBandwidthBytesPerS caps the bytes all exports together put on
	// the wire per second (package tier1/export); 0: no cap.
	ExportBandwidthBytesPerS int64 `json:"export_bandwidth_bytes_per_s,omitempty"`
}

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
	if c.MaxInflightBytes < int64(c.MaxBatchBytes) {
		bad("max_inflight_bytes", "must be at least tier1.max_batch_bytes")
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
