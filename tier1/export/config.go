package export

import (
	"fmt"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/tier1"
)

// Config is one entry of the config file's "exports" list.
type Config struct {
	// Name names the export in its status, routes and cursor; unique.
	Name string `json:"name"`
	// Endpoint is the upstream: http(s)://host:port (a POST per batch),
	// ws(s)://host:port (its WebSocket stream, a window in flight), or
	// mqtt:// (the broker of the mqtt section).
	Endpoint string `json:"endpoint"`
	// TokenEnv names the environment variable with the upstream's bearer
	// token (a tier1:write token there); Token is read from it.
	TokenEnv string `json:"token_env,omitempty"`
	Token    string `json:"-"`
	// Routines the export carries; empty: all.
	Routines []string `json:"routines,omitempty"`
	// Priority from 1 (first) to 10 (last) for the global bandwidth;
	// default 5.
	Priority int `json:"priority,omitempty"`
	// Order is live_first (the default: with a backlog, new batches go in
	// a live lane first) or fifo (oldest first).
	Order string `json:"order,omitempty"`
	// BandwidthBytesPerS caps the bytes this export puts on the wire per
	// second; 0: no cap of its own.
	BandwidthBytesPerS int64 `json:"bandwidth_bytes_per_s,omitempty"`
	// Start is where a new export begins in the log: new (the default,
	// as the uplink always did), all (everything queued), or since, with
	// Since (RFC 3339) the earliest queue time sent.
	Start string `json:"start,omitempty"`
	Since string `json:"since,omitempty"`
	// BatchSize is how many stored batches go out in one window (default
	// 32); LingerMS waits that long after a new batch for more before a
	// window goes (default 0).
	BatchSize int `json:"batch_size,omitempty"`
	LingerMS  int `json:"linger_ms,omitempty"`
	// Compression is how batches go on the wire: auto (the default:
	// gzip, else deflate, once the upstream announces it), off, gzip or
	// deflate (that coding, once the upstream announces it). An HTTP
	// upstream announces the codings it takes in the Accept-Encoding of
	// its answers (RFC 7694); a batch is never sent in a coding it did not
	// announce, so an older upstream gets plain batches. WebSocket and
	// MQTT batches go plain (doc.go says why): gzip and deflate are for
	// http(s) endpoints only.
	Compression string `json:"compression,omitempty"`
	// MaxBackoffMS caps the wait between attempts while the upstream is
	// unreachable; default 30000.
	MaxBackoffMS int `json:"max_backoff_ms,omitempty"`
}

// Orders and starts.
const (
	OrderLiveFirst = "live_first"
	OrderFIFO      = "fifo"
	StartNew       = "new"
	StartAll       = "all"
	StartSince     = "since"

	CompressionAuto    = "auto"
	CompressionOff     = "off"
	CompressionGzip    = "gzip"
	CompressionDeflate = "deflate"
)

// UplinkName is the name the "uplink" shorthand's export gets.
const UplinkName = "uplink"

// FromUplink is the export the "uplink" section stands for: every routine,
// start all (the log holds what was queued since an export was
// configured, as the uplink's queue did), in the default order
// (live_first).
func FromUplink(u *tier1.UplinkConfig) Config {
	return Config{Name: UplinkName, Endpoint: u.Endpoint, TokenEnv: u.TokenEnv, Token: u.Token,
		MaxBackoffMS: u.MaxBackoffMS, Start: StartAll, Order: OrderLiveFirst}
}

// withDefaults fills the defaults in.
func (c Config) withDefaults() Config {
	if c.Priority == 0 {
		c.Priority = 5
	}
	if c.Order == "" {
		c.Order = OrderLiveFirst
	}
	if c.Start == "" {
		c.Start = StartNew
	}
	if c.Compression == "" {
		c.Compression = CompressionAuto
	}
	if c.BatchSize == 0 {
		c.BatchSize = 32
	}
	if c.MaxBackoffMS == 0 {
		c.MaxBackoffMS = 30_000
	}
	return c
}

// since is Since parsed (zero unless Start is since).
func (c *Config) since() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, c.Since)
	return t
}

// Check reports every bad field of the list through bad, named relative
// to the file's top level ("exports[0].priority").
func Check(list []Config, bad func(field, format string, args ...any)) {
	seen := map[string]bool{}
	for i, c := range list {
		f := func(name string) string { return fmt.Sprintf("exports[%d].%s", i, name) }
		switch {
		case c.Name == "" || strings.ContainsAny(c.Name, "/ \t\n") || len(c.Name) > 64:
			bad(f("name"), "%q must be 1 to 64 characters without slashes or spaces", c.Name)
		case seen[c.Name]:
			bad(f("name"), "%q names two exports", c.Name)
		}
		seen[c.Name] = true
		if !validEndpoint(c.Endpoint) {
			bad(f("endpoint"), "%q must be an http://, https://, ws://, wss:// URL or mqtt://", c.Endpoint)
		}
		if c.Priority != 0 && (c.Priority < 1 || c.Priority > 10) {
			bad(f("priority"), "%d must be 1 to 10", c.Priority)
		}
		if c.Order != "" && c.Order != OrderLiveFirst && c.Order != OrderFIFO {
			bad(f("order"), "%q must be live_first or fifo", c.Order)
		}
		if c.BandwidthBytesPerS < 0 {
			bad(f("bandwidth_bytes_per_s"), "must not be negative")
		}
		switch c.Start {
		case "", StartNew, StartAll:
			if c.Since != "" {
				bad(f("since"), "is for start \"since\"")
			}
		case StartSince:
			if _, err := time.Parse(time.RFC3339Nano, c.Since); err != nil {
				bad(f("since"), "%q must be an RFC 3339 time, e.g. 2026-12-01T00:00:00Z", c.Since)
			}
		default:
			bad(f("start"), "%q must be new, all or since", c.Start)
		}
		switch c.Compression {
		case "", CompressionAuto, CompressionOff:
		case CompressionGzip, CompressionDeflate:
			if !strings.HasPrefix(c.Endpoint, "http") {
				bad(f("compression"), "%q is for http:// and https:// endpoints (WebSocket and MQTT batches go plain); use auto or off", c.Compression)
			}
		default:
			bad(f("compression"), "%q must be auto, off, gzip or deflate", c.Compression)
		}
		if c.BatchSize < 0 || c.BatchSize > 1024 {
			bad(f("batch_size"), "%d must be 1 to 1024", c.BatchSize)
		}
		if c.LingerMS < 0 || c.LingerMS > 60_000 {
			bad(f("linger_ms"), "%d must be 0 to 60000", c.LingerMS)
		}
		if c.MaxBackoffMS < 0 {
			bad(f("max_backoff_ms"), "must not be negative")
		}
	}
}

func validEndpoint(e string) bool {
	if strings.HasPrefix(e, "mqtt") {
		return true // the mqtt section's check (cli/config) names what is wrong
	}
	for _, p := range []string{"http://", "https://", "ws://", "wss://"} {
		if strings.HasPrefix(e, p) && len(e) > len(p) {
			return true
		}
	}
	return false
}
