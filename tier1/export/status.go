package export

import (
	"time"

	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
)

// Status is the answer of GET /tier1/exports.
type Status struct {
	Exports []ExportStatus `json:"exports"`
}

// ExportStatus is one export's state (the names are a contract).
type ExportStatus struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	// State is connected, backing_off or paused.
	State         string `json:"state"`
	Priority      int    `json:"priority"`
	BacklogFrames uint64 `json:"backlog_frames"`
	BacklogBytes  uint64 `json:"backlog_bytes"`
	// OldestUnsentTS is when the oldest batch waiting was queued (RFC
	// 3339), null when none waits.
	OldestUnsentTS *string `json:"oldest_unsent_ts"`
	// LagSeconds is how long it has waited.
	LagSeconds    float64 `json:"lag_seconds"`
	SentFrames    uint64  `json:"sent_frames"`
	DroppedFrames uint64  `json:"dropped_frames"`
	// RateBytesPerS is the bytes put on the wire per second over the last
	// 10 s; BandwidthBytesPerS the export's cap (0: none).
	RateBytesPerS      float64 `json:"rate_bytes_per_s"`
	BandwidthBytesPerS int64   `json:"bandwidth_bytes_per_s"`
	// EtaSeconds is the backlog's bytes over the rate; null while nothing
	// moves and something waits.
	EtaSeconds *float64 `json:"eta_seconds"`

	Order         string   `json:"order"`
	Routines      []string `json:"routines,omitempty"`
	SentBytes     uint64   `json:"sent_bytes"`
	SkippedFrames uint64   `json:"skipped_frames"`
	Error         string   `json:"error,omitempty"`
	// Compression is the export's setting; Coding the content coding
	// batches go in now (identity: plain). RawBytes and WireBytes are the
	// bodies delivered since start as stored and as they went (after
	// compression); CompressionRatio is RawBytes over WireBytes (1 with
	// none; 0 before a delivery).
	Compression      string  `json:"compression"`
	Coding           string  `json:"coding"`
	RawBytes         uint64  `json:"raw_bytes"`
	WireBytes        uint64  `json:"wire_bytes"`
	CompressionRatio float64 `json:"compression_ratio"`
}

// Status is every export's state now.
func (s *Set) Status() Status {
	out := Status{Exports: []ExportStatus{}}
	now := s.now()
	for _, e := range s.list {
		out.Exports = append(out.Exports, e.status(now))
	}
	return out
}

func (e *Export) status(now time.Time) ExportStatus {
	e.mu.Lock()
	c, state, lastErr := e.cur, e.state, e.lastErr
	e.mu.Unlock()
	st := ExportStatus{Name: e.cfg.Name, Endpoint: e.cfg.Endpoint, State: state, Priority: e.cfg.Priority,
		BandwidthBytesPerS: e.capBPS.Load(), Order: e.cfg.Order, Routines: e.cfg.Routines,
		SkippedFrames: c.Skipped, Error: lastErr,
		Compression: e.cfg.Compression, Coding: e.coding(), RawBytes: e.rawBytes.Load(), WireBytes: e.wireBytes.Load()}
	if st.WireBytes > 0 {
		st.CompressionRatio = float64(st.RawBytes) / float64(st.WireBytes)
	}
	var endp pos
	var gapF, gapB uint64
	oldest := int64(0)
	_ = e.set.db.View(func(tx *store.Tx) error {
		endp = end(tx)
		// The first entry of each lane [p, q): the oldest waiting, and the
		// frames pruned before it (dropped, though the runner has not
		// passed them yet).
		lane := func(p, q pos) {
			seqs, vals := tier1.OutboxFrom(tx, p.Seq, 1, 0)
			if len(seqs) == 0 || seqs[0] >= q.Seq {
				gapF, gapB = gapF+q.Frames-p.Frames, gapB+q.Bytes-p.Bytes
				return
			}
			if h, _, ok := tier1.ParseOutboxEntry(vals[0]); ok {
				gapF, gapB = gapF+h.CumFrames-p.Frames, gapB+h.CumBytes-p.Bytes
				if oldest == 0 || h.At < oldest {
					oldest = h.At
				}
			}
		}
		if c.Split {
			lane(c.Low, c.LiveFrom)
			lane(c.LiveHigh, endp)
		} else {
			lane(c.Low, endp)
		}
		return nil
	})
	st.BacklogFrames, st.BacklogBytes = c.queued(endp)
	st.BacklogFrames, st.BacklogBytes = st.BacklogFrames-gapF, st.BacklogBytes-gapB
	st.SentFrames, st.SentBytes, st.DroppedFrames = c.Sent, c.SentBytes, c.Dropped+gapF
	st.RateBytesPerS = e.rate.perSecond(now)
	if oldest != 0 {
		t := time.Unix(0, oldest).UTC().Format(time.RFC3339Nano)
		st.OldestUnsentTS = &t
		st.LagSeconds = max(now.Sub(time.Unix(0, oldest)).Seconds(), 0)
	}
	var eta float64
	if st.BacklogBytes > 0 {
		if st.RateBytesPerS <= 0 {
			return st
		}
		eta = float64(st.BacklogBytes) / st.RateBytesPerS
	}
	st.EtaSeconds = &eta
	return st
}

// RegisterMetrics adds the exports' series to r, labelled by export.
func (s *Set) RegisterMetrics(r *metrics.Registry) {
	vec := func(f func(*ExportStatus) float64) func() map[string]float64 {
		return func() map[string]float64 {
			m := map[string]float64{}
			for _, st := range s.Status().Exports {
				m[st.Name] = f(&st)
			}
			return m
		}
	}
	r.GaugeVecFunc("synapse_tier1_export_backlog_frames", "Frames waiting.", "export", vec(func(st *ExportStatus) float64 { return float64(st.BacklogFrames) }))
	r.GaugeVecFunc("synapse_tier1_export_backlog_bytes", "Batch bytes waiting.", "export", vec(func(st *ExportStatus) float64 { return float64(st.BacklogBytes) }))
	r.GaugeVecFunc("synapse_tier1_export_lag_seconds", "Age of the oldest batch waiting.", "export", vec(func(st *ExportStatus) float64 { return st.LagSeconds }))
	r.CounterVecFunc("synapse_tier1_export_sent_frames_total", "Frames acknowledged.", "export", vec(func(st *ExportStatus) float64 { return float64(st.SentFrames) }))
	r.CounterVecFunc("synapse_tier1_export_sent_bytes_total", "Batch bytes acknowledged.", "export", vec(func(st *ExportStatus) float64 { return float64(st.SentBytes) }))
	r.CounterVecFunc("synapse_tier1_export_dropped_frames_total", "Frames pruned or refused before they were sent.", "export", vec(func(st *ExportStatus) float64 { return float64(st.DroppedFrames) }))
	r.CounterVecFunc("synapse_tier1_export_raw_bytes_total", "Batch bytes delivered as stored, before compression (since start).", "export", vec(func(st *ExportStatus) float64 { return float64(st.RawBytes) }))
	r.CounterVecFunc("synapse_tier1_export_wire_bytes_total", "Batch bytes delivered as they went on the wire, after compression (since start).", "export", vec(func(st *ExportStatus) float64 { return float64(st.WireBytes) }))
	r.GaugeVecFunc("synapse_tier1_export_compression_ratio", "Raw over wire bytes delivered since start (1: none).", "export", vec(func(st *ExportStatus) float64 { return st.CompressionRatio }))
	r.GaugeVecFunc("synapse_tier1_export_rate_bytes_per_second", "Wire bytes per second, last 10 s.", "export", vec(func(st *ExportStatus) float64 { return st.RateBytesPerS }))
	r.GaugeVecFunc("synapse_tier1_export_bandwidth_bytes_per_second", "Bandwidth cap (0: none).", "export", vec(func(st *ExportStatus) float64 { return float64(st.BandwidthBytesPerS) }))
	r.GaugeVecFunc("synapse_tier1_export_up", "1 while connected.", "export", vec(func(st *ExportStatus) float64 {
		if st.State == StateConnected {
			return 1
		}
		return 0
	}))
	r.GaugeVecFunc("synapse_tier1_export_paused", "1 while paused.", "export", vec(func(st *ExportStatus) float64 {
		if st.State == StatePaused {
			return 1
		}
		return 0
	}))
	// The uplink's series (before exports), over all exports.
	sum := func(f func(e *Export) uint64) func() float64 {
		return func() float64 {
			var n uint64
			for _, e := range s.list {
				n += f(e)
			}
			return float64(n)
		}
	}
	r.CounterFunc("synapse_tier1_uplink_sent_batches_total", "Batches acknowledged (all exports).", sum(func(e *Export) uint64 { return e.sentBatches.Load() }))
	r.CounterFunc("synapse_tier1_uplink_failures_total", "Failed attempts (all exports).", sum(func(e *Export) uint64 { return e.Failures.Load() }))
	r.CounterFunc("synapse_tier1_uplink_dropped_batches_total", "Batches refused for good (all exports).", sum(func(e *Export) uint64 { return e.refusedBatches.Load() }))
	r.GaugeFunc("synapse_tier1_uplink_pending_batches", "Batches in the export log.", func() float64 {
		n := 0
		_ = s.db.View(func(tx *store.Tx) error { n = tier1.OutboxLen(tx); return nil })
		return float64(n)
	})
	r.GaugeFunc("synapse_tier1_uplink_lag_seconds", "Age of the oldest batch waiting (all exports).", func() float64 {
		lag := 0.0
		for _, st := range s.Status().Exports {
			lag = max(lag, st.LagSeconds)
		}
		return lag
	})
	r.CounterVecFunc("synapse_tier1_export_failures_total", "Failed attempts.", "export", func() map[string]float64 {
		m := map[string]float64{}
		for _, e := range s.list {
			m[e.cfg.Name] = float64(e.Failures.Load())
		}
		return m
	})
}

// StatusJSON is Status for the HTTP API (httpapi.Exports).
func (s *Set) StatusJSON() any { return s.Status() }

// Has reports whether name is a configured export.
func (s *Set) Has(name string) bool { return s.byName[name] != nil }
