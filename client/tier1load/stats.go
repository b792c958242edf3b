package tier1load

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/client"
)

// maxLatencySamples bounds the acknowledgement latencies kept for the
// percentiles (a uniform sample of them when there are more).
const maxLatencySamples = 100_000

// Stats counts what a run did; the sender, the acknowledgement readers and
// a live display share it.
type Stats struct {
	mu          sync.Mutex
	start       time.Time // first batch sent
	lastAnswer  time.Time
	end         time.Time
	batchesSent int64
	framesSent  int64
	wireBytes   int64
	acked       int64 // frames of acknowledged batches
	refused     int64 // frames of refused batches
	duplicates  int64 // batches the agent had already stored
	firstErr    string
	interrupted bool
	latencies   []time.Duration // a uniform sample
	answered    int64           // batches answered
	recent      []time.Duration // latencies since the last Tick
}

// Sent records a batch about to go out with its size on the wire.
func (st *Stats) Sent(b *Batch, wireBytes int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.batchesSent == 0 {
		st.start = b.SentAt
	}
	st.batchesSent++
	st.framesSent += int64(b.Frames)
	st.wireBytes += int64(wireBytes)
}

// Answer records the acknowledgement or refusal of a batch.
func (st *Stats) Answer(b *Batch, ack *client.Tier1Ack, at time.Time) {
	lat := at.Sub(b.SentAt)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lastAnswer = at
	st.answered++
	if ack.OK {
		st.acked += int64(b.Frames)
		if ack.Duplicate {
			st.duplicates++
		}
	} else {
		st.refused += int64(b.Frames)
		if st.firstErr == "" {
			st.firstErr = "batch " + b.ID + ": unknown error"
			if ack.Error != nil {
				st.firstErr = "batch " + b.ID + ": " + ack.Error.Error()
			}
		}
	}
	if len(st.latencies) < maxLatencySamples {
		st.latencies = append(st.latencies, lat)
	} else if j := rand.Int64N(st.answered); j < maxLatencySamples {
		st.latencies[j] = lat
	}
	if len(st.recent) < maxLatencySamples {
		st.recent = append(st.recent, lat)
	}
}

// Unanswered is the number of frames sent without an answer.
func (st *Stats) Unanswered() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.framesSent - st.acked - st.refused
}

// FramesSent is the number of frames sent.
func (st *Stats) FramesSent() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.framesSent
}

// Stopped records whether an interrupt ended the sending.
func (st *Stats) Stopped(interrupted bool) {
	st.mu.Lock()
	st.interrupted = interrupted
	st.mu.Unlock()
}

// Finish fixes the end of the run: the last answer, or now without one.
func (st *Stats) Finish() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.end = st.lastAnswer
	if st.end.IsZero() {
		st.end = time.Now()
	}
	if st.start.IsZero() {
		st.start = st.end
	}
}

// Tick returns the totals for a live display and the median latency since
// the last Tick.
func (st *Stats) Tick() (acked, refused int64, p50 time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p50 = Percentile(st.recent, 0.5)
	st.recent = st.recent[:0]
	return st.acked, st.refused, p50
}

// Percentile returns the p-quantile (nearest rank) of ds, 0 when empty;
// ds is sorted in place.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// Summary is the outcome of a finished run (`synapse tier1 send --json`).
type Summary struct {
	Transport       string  `json:"transport"`
	FramesSent      int64   `json:"frames_sent"`
	BatchesSent     int64   `json:"batches_sent"`
	Acknowledged    int64   `json:"acknowledged"`
	Refused         int64   `json:"refused"`
	Unacknowledged  int64   `json:"unacknowledged"`
	Duplicates      int64   `json:"duplicate_batches"`
	FirstError      string  `json:"first_error,omitempty"`
	Interrupted     bool    `json:"interrupted,omitempty"`
	DurationSeconds float64 `json:"duration_seconds"`
	FramesPerSecond float64 `json:"frames_per_second"`
	AckP50Ms        float64 `json:"ack_p50_ms"`
	AckP99Ms        float64 `json:"ack_p99_ms"`
	WireBytes       int64   `json:"wire_bytes"`
	BytesPerFrame   float64 `json:"bytes_per_frame"`
}

// Summary computes the figures of a finished run.
func (st *Stats) Summary(cfg Config) Summary {
	st.mu.Lock()
	defer st.mu.Unlock()
	sum := Summary{
		Transport:  "websocket",
		FramesSent: st.framesSent, BatchesSent: st.batchesSent,
		Acknowledged: st.acked, Refused: st.refused, Unacknowledged: st.framesSent - st.acked - st.refused,
		Duplicates: st.duplicates, FirstError: st.firstErr, Interrupted: st.interrupted,
		DurationSeconds: st.end.Sub(st.start).Seconds(),
		AckP50Ms:        float64(Percentile(st.latencies, 0.50)) / float64(time.Millisecond),
		AckP99Ms:        float64(Percentile(st.latencies, 0.99)) / float64(time.Millisecond),
		WireBytes:       st.wireBytes,
	}
	if cfg.HTTP {
		sum.Transport = "http"
	}
	if sum.DurationSeconds > 0 {
		sum.FramesPerSecond = float64(st.acked) / sum.DurationSeconds
	}
	if st.framesSent > 0 {
		sum.BytesPerFrame = float64(st.wireBytes) / float64(st.framesSent)
	}
	return sum
}
