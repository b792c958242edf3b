package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/bodycodec"
	"github.com/synapse-edge/synapse/transport"
)

// Options are what a Set sends with and through.
type Options struct {
	Ingestor  *tier1.Ingestor
	DB        *store.DB
	Transport transport.Transport
	// Source is this agent's id (the X-Synapse-Source-Agent header the
	// upstream deduplicates batch ids within).
	Source string
	// BandwidthBytesPerS is the global cap (tier1.export_bandwidth_bytes_per_s);
	// 0: none.
	BandwidthBytesPerS int64
	Logger             *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Set is the exports of one agent.
type Set struct {
	in         *tier1.Ingestor
	db         *store.DB
	t          transport.Transport
	source     string
	log        *slog.Logger
	now        func() time.Time
	global     *limiter
	globalRate atomic.Int64
	list       []*Export
	byName     map[string]*Export
	poke       chan struct{}
	enc        bodycodec.Encoder

	dropMu sync.Mutex
	drops  map[string]uint64 // dropped frames seen since start, for the log
}

// ErrUnknown is returned for an export name that is not configured.
var ErrUnknown = errors.New("no such export")

// New builds the exports of list (checked with Check).
func New(list []Config, o Options) *Set {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Set{in: o.Ingestor, db: o.DB, t: o.Transport, source: o.Source, log: o.Logger, now: o.Now,
		global: newLimiter(o.BandwidthBytesPerS, o.Now), byName: map[string]*Export{},
		poke: make(chan struct{}, 1), drops: map[string]uint64{}}
	s.globalRate.Store(o.BandwidthBytesPerS)
	for _, c := range list {
		c = c.withDefaults()
		e := &Export{cfg: c, set: s, state: StateConnected, resume: make(chan struct{}), own: newBucket(c.BandwidthBytesPerS, o.Now())}
		if len(c.Routines) > 0 {
			e.routines = map[string]bool{}
			for _, r := range c.Routines {
				e.routines[r] = true
			}
		}
		e.capBPS.Store(c.BandwidthBytesPerS)
		s.list = append(s.list, e)
		s.byName[c.Name] = e
	}
	return s
}

// SetCaps changes the bandwidth caps at once, as a reload of the config
// file does: global is tier1.export_bandwidth_bytes_per_s, caps an
// export's bandwidth_bytes_per_s by name (0: no cap); an export not named
// keeps its cap. A window already read (half a second of the old cap at
// most) still goes whole; the next is cut to the new cap, and a debt of
// the old one is kept up to a second of the new.
func (s *Set) SetCaps(global int64, caps map[string]int64) {
	s.globalRate.Store(global)
	s.global.setRate(global)
	for name, c := range caps {
		e := s.byName[name]
		if e == nil {
			continue
		}
		e.ownMu.Lock()
		e.own = retune(e.own, c, s.now())
		e.ownMu.Unlock()
		e.capBPS.Store(c)
	}
	s.log.Info("export: bandwidth caps changed", "global", global, "exports", len(caps))
}

// Open turns the ingestor's export log on, brings an older file's queue
// to the log's form, and reads each export's cursor, placing a new
// export's by its start. Call it before ingest starts.
func (s *Set) Open(ctx context.Context) error {
	s.in.EnableOutbox()
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("export log: %w", err)
	}
	for _, e := range s.list {
		err := s.db.Update(ctx, func(tx *store.Tx) error {
			c, ok, err := loadCursor(tx, e.cfg.Name)
			if err != nil || ok {
				e.cur = c
				return err
			}
			c.Low = s.startPos(tx, &e.cfg)
			c.Start = c.Low
			e.cur = c
			return c.put(tx, e.cfg.Name)
		})
		if err != nil {
			return err
		}
		if e.cur.Paused {
			e.state = StatePaused
		}
	}
	return s.sweep(ctx)
}

// startPos is where a new export begins.
func (s *Set) startPos(tx *store.Tx, c *Config) pos {
	endp := end(tx)
	if c.Start == StartNew {
		return endp
	}
	since := c.since().UnixNano()
	for from := uint64(0); ; {
		seqs, vals := tier1.OutboxFrom(tx, from, 256, 4<<20)
		if len(seqs) == 0 {
			return endp
		}
		for i, v := range vals {
			h, _, ok := tier1.ParseOutboxEntry(v)
			if ok && (c.Start == StartAll || h.At >= since) {
				return at(seqs[i], h)
			}
		}
		from = seqs[len(seqs)-1] + 1
	}
}

// migrate gives the entries of a file written before the export log (the
// uplink's queue: bare batches, no totals) their headers, in order.
func (s *Set) migrate(ctx context.Context) error {
	var legacy bool
	_ = s.db.View(func(tx *store.Tx) error {
		_, _, next := tier1.OutboxTotals(tx)
		if seqs, vals := tier1.OutboxFrom(tx, 0, 1, 0); next == 0 && len(seqs) == 1 {
			_, _, ok := tier1.ParseOutboxEntry(vals[0])
			legacy = !ok
		}
		return nil
	})
	if !legacy {
		return nil
	}
	now := s.now().UnixNano()
	for from, done := uint64(0), false; !done; {
		err := s.db.Update(ctx, func(tx *store.Tx) error {
			seqs, vals := tier1.OutboxFrom(tx, from, 512, 4<<20)
			if len(seqs) == 0 {
				done = true
				return nil
			}
			f, b, _ := tier1.OutboxTotals(tx)
			for i, v := range vals {
				n, err := tier1.BatchFrames(v)
				if err != nil {
					return fmt.Errorf("queued batch %d: %w", seqs[i], err)
				}
				h := tier1.OutboxEntry{Frames: uint32(n), CumFrames: f, CumBytes: b, At: now}
				if err := tier1.PutOutbox(tx, seqs[i], tier1.AppendOutboxEntry(nil, h, v)); err != nil {
					return err
				}
				f, b = f+uint64(n), b+uint64(len(v))
			}
			from = seqs[len(seqs)-1] + 1
			return tier1.PutOutboxTotals(tx, f, b, from)
		})
		if err != nil {
			return err
		}
	}
	s.log.Info("export: the uplink's queue is the export log now")
	return nil
}

// minLow is the lowest place any export is at, with e's taken as low.
func (s *Set) minLow(e *Export, low uint64) uint64 {
	m := low
	for _, o := range s.list {
		if o == e {
			continue
		}
		o.mu.Lock()
		m = min(m, o.cur.Low.Seq)
		o.mu.Unlock()
	}
	return m
}

// sweep deletes the log entries every export is past (those of exports
// removed from the configuration, say).
func (s *Set) sweep(ctx context.Context) error {
	if len(s.list) == 0 {
		return nil
	}
	m := s.minLow(nil, ^uint64(0))
	for {
		var n int
		if err := s.db.Update(ctx, func(tx *store.Tx) (err error) { n, err = tier1.AckOutboxBefore(tx, m, 4096); return err }); err != nil {
			return err
		}
		if n < 4096 {
			return nil
		}
	}
}

// Run forwards every export until ctx is done.
func (s *Set) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, e := range s.list {
		wg.Add(1)
		go func() { defer wg.Done(); e.run(ctx) }()
	}
	wg.Wait()
}

// wait waits d or until ctx is done.
func (s *Set) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ManySender is a wire that carries several batches in flight at once
// and keeps their order (the MQTT and WebSocket wires); SendMany returns
// one outcome per message, in order.
type ManySender interface {
	SendMany(ctx context.Context, ms []*transport.Message) []transport.Outcome
}

// manySender is the wire of endpoint if it is a ManySender.
func (s *Set) manySender(endpoint string) ManySender {
	w := s.t
	if m, ok := w.(interface {
		For(to string) (transport.Transport, error)
	}); ok {
		if t, err := m.For(endpoint); err == nil {
			w = t
		}
	}
	ms, _ := w.(ManySender)
	return ms
}

// noteDrops logs frames an export will never send: the first, then each
// time the count passes a power of two.
func (s *Set) noteDrops(name string, n uint64) {
	s.dropMu.Lock()
	old := s.drops[name]
	s.drops[name] = old + n
	s.dropMu.Unlock()
	if old == 0 || bits.Len64(old) != bits.Len64(old+n) {
		s.log.Warn("export: frames dropped before they were sent (retention, quotas or refused by the upstream)",
			"export", name, "dropped_frames", old+n)
	}
}

// Pause stops sending to the export name until Resume; it holds across
// restarts.
func (s *Set) Pause(ctx context.Context, name string) error { return s.setPaused(ctx, name, true) }

// Resume starts sending to a paused export again.
func (s *Set) Resume(ctx context.Context, name string) error { return s.setPaused(ctx, name, false) }

func (s *Set) setPaused(ctx context.Context, name string, p bool) error {
	e := s.byName[name]
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	// e.mu is never held while waiting for the store's writer (whose
	// transactions lock the exports' cursors, minLow).
	e.mu.Lock()
	e.cur.Paused = p
	if p {
		e.state = StatePaused
	} else {
		e.state = StateConnected
		close(e.resume)
		e.resume = make(chan struct{})
	}
	e.mu.Unlock()
	return s.db.Update(ctx, func(tx *store.Tx) error {
		e.mu.Lock()
		n := e.cur
		e.mu.Unlock()
		return n.put(tx, name)
	})
}
