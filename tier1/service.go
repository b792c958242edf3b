package tier1

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
)

// Service is tier 1 as a program runs it beside an agent (the agent's
// Options.Tier1): the routines (the built-in one and the section's), the
// section in force, and, once the agent opened its store and called Open,
// the ingestor over that store. The agent prunes it with its own
// retention and offers its routines in negotiations; the program hands
// Ingestor to the layers that ingest and read frames (the HTTP API, the
// MQTT southbound, the exports).
type Service struct {
	reg  *Registry
	opts ServiceOptions
	conf atomic.Pointer[Config]
	in   *Ingestor
}

// ServiceOptions are what a Service is built with besides its section.
type ServiceOptions struct {
	// Uplink queues every stored batch in the export log from the start
	// (IngestConfig.Uplink): set it when the configuration has exports.
	Uplink bool
	// Now is the clock (the agent's); nil: time.Now.
	Now func() time.Time
	// Logger receives the disk budget's logs; nil: none.
	Logger *slog.Logger
	// SeenFor is how long batch ids are remembered (the agent's
	// idempotency TTL): Prune forgets older ones.
	SeenFor time.Duration
}

// NewService builds the registry of the built-in routine and those of
// c, which must be valid (Config.Check). Its error is the registry's.
func NewService(c Config, opts ServiceOptions) (*Service, error) {
	reg, err := NewRegistry(append([]Descriptor{Telemetry()}, c.Routines...)...)
	if err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Service{reg: reg, opts: opts}
	s.conf.Store(&c)
	return s, nil
}

// Open builds the ingestor over db, the agent's store, and its disk
// budget, with their metrics on reg. The agent calls it once its store is
// open, before it recovers tasks.
func (s *Service) Open(_ context.Context, db *store.DB, reg *metrics.Registry) error {
	c := s.Config()
	s.in = NewIngestor(s.reg, db, IngestConfig{MaxInflightBytes: c.MaxInflightBytes, Uplink: s.opts.Uplink, Now: s.opts.Now})
	s.in.RegisterMetrics(reg)
	if err := s.in.UseDisk(s.conf.Load, db.Path(), s.opts.Logger, reg); err != nil {
		return fmt.Errorf("tier1 disk budget: %w", err)
	}
	return nil
}

// Prune applies the section's retention once, at now; batch ids older
// than SeenFor are forgotten.
func (s *Service) Prune(ctx context.Context, now time.Time) error {
	return s.in.Prune(ctx, now, s.Config(), now.Add(-s.opts.SeenFor))
}

// Routine is the version and descriptor hash of the routine
// capabilityID, for a negotiation.
func (s *Service) Routine(capabilityID string) (version, hash string, ok bool) {
	d, ok := s.reg.Get(capabilityID)
	if !ok {
		return "", "", false
	}
	return d.Version, d.Hash(), true
}

// Routines is the number of routines.
func (s *Service) Routines() int { return len(s.reg.list) }

// Registry is the routines.
func (s *Service) Registry() *Registry { return s.reg }

// Ingestor is the ingestor, once Open built it.
func (s *Service) Ingestor() *Ingestor { return s.in }

// Config is the section in force.
func (s *Service) Config() Config { return *s.conf.Load() }

// SetConfig makes c the section in force. The disk budget and retention
// read it at each use (retention_hours, max_bytes_per_routine, the
// quotas' limits); the routines and max_inflight_bytes were read when the
// service was built and opened.
func (s *Service) SetConfig(c Config) { s.conf.Store(&c) }
