package httpapi

import (
	"errors"
	"fmt"
)

// Limits are the limits of the HTTP server: the "http" section of the
// config file.
type Limits struct {
	MaxBodyBytes        int `json:"max_body_bytes,omitempty"`
	MaxHeaderBytes      int `json:"max_header_bytes,omitempty"`
	ReadTimeoutSeconds  int `json:"read_timeout_seconds,omitempty"`
	WriteTimeoutSeconds int `json:"write_timeout_seconds,omitempty"`
	IdleTimeoutSeconds  int `json:"idle_timeout_seconds,omitempty"`
	MaxConnsPerIP       int `json:"max_conns_per_ip,omitempty"`
	MaxConns            int `json:"max_conns,omitempty"`
	// MaxInflightBodyBytes bounds the request bodies held in memory at
	// once, over all connections; requests beyond it wait, then get 503.
	// Routes without a bearer token (signed P2P envelopes) may use a
	// quarter of it. Default 32 MiB.
	MaxInflightBodyBytes int64 `json:"max_inflight_body_bytes,omitempty"`
}

// DefaultLimits are the limits used when nothing is set.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:         1 << 20,
		MaxHeaderBytes:       16 << 10,
		ReadTimeoutSeconds:   30,
		WriteTimeoutSeconds:  30,
		IdleTimeoutSeconds:   120,
		MaxConnsPerIP:        256,
		MaxConns:             4096,
		MaxInflightBodyBytes: 32 << 20,
	}
}

// Validate names every limit below 1 (as "config: http.FIELD: ...").
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		field string
		v     int64
	}{
		{"max_body_bytes", int64(l.MaxBodyBytes)}, {"max_header_bytes", int64(l.MaxHeaderBytes)},
		{"read_timeout_seconds", int64(l.ReadTimeoutSeconds)}, {"write_timeout_seconds", int64(l.WriteTimeoutSeconds)},
		{"idle_timeout_seconds", int64(l.IdleTimeoutSeconds)}, {"max_conns_per_ip", int64(l.MaxConnsPerIP)},
		{"max_conns", int64(l.MaxConns)}, {"max_inflight_body_bytes", l.MaxInflightBodyBytes},
	} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("config: http.%s: must be at least 1", f.field))
		}
	}
	return errors.Join(errs...)
}
