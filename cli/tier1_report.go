package cli

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/client"
)

// maxLatencySamples bounds the acknowledgement latencies kept for the
// percentiles (a uniform sample of them when there are more).
const maxLatencySamples = 100_000

// sendStats counts what tier1 send did; the sender, the acknowledgement
// readers and the live line share it.
type sendStats struct {
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
	recent      []time.Duration // latencies since the last live line
}

func newSendStats() *sendStats { return &sendStats{} }

// sent records a batch about to go out with its size on the wire.
func (st *sendStats) sent(b *pendingBatch, wireBytes int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.batchesSent == 0 {
		st.start = b.sentAt
	}
	st.batchesSent++
	st.framesSent += int64(b.frames)
	st.wireBytes += int64(wireBytes)
}

// answer records the acknowledgement or refusal of a batch.
func (st *sendStats) answer(b *pendingBatch, ack *client.Tier1Ack, at time.Time) {
	lat := at.Sub(b.sentAt)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.lastAnswer = at
	st.answered++
	if ack.OK {
		st.acked += int64(b.frames)
		if ack.Duplicate {
			st.duplicates++
		}
	} else {
		st.refused += int64(b.frames)
		if st.firstErr == "" {
			st.firstErr = "batch " + b.id + ": unknown error"
			if ack.Error != nil {
				st.firstErr = "batch " + b.id + ": " + ack.Error.Error()
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

// unanswered is the number of frames sent without an answer.
func (st *sendStats) unanswered() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.framesSent - st.acked - st.refused
}

// framesSentCount is the number of frames sent.
func (st *sendStats) framesSentCount() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.framesSent
}

func (st *sendStats) stopped(interrupted bool) {
	st.mu.Lock()
	st.interrupted = interrupted
	st.mu.Unlock()
}

// finish fixes the end of the run: the last answer, or now without one.
func (st *sendStats) finish() {
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

// tick returns the totals for the live line and the median latency since
// the last tick.
func (st *sendStats) tick() (acked, refused int64, p50 time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p50 = percentile(st.recent, 0.5)
	st.recent = st.recent[:0]
	return st.acked, st.refused, p50
}

// percentile returns the p-quantile (nearest rank) of ds, 0 when empty;
// ds is sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// liveLine redraws one line of progress on a terminal once per second.
type liveLine struct {
	stopc chan struct{}
	done  chan struct{}
}

// startLiveLine starts the live line on standard error when that is a
// terminal; otherwise stop does nothing.
func startLiveLine(s *session, st *sendStats) *liveLine {
	if !isTerminal(s.io.Err) {
		return &liveLine{}
	}
	l := &liveLine{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		prev, prevAt, drawn := int64(0), time.Now(), 0
		for {
			select {
			case <-l.stopc:
				if drawn > 0 {
					fmt.Fprintf(s.io.Err, "\r%s\r", strings.Repeat(" ", drawn))
				}
				return
			case now := <-t.C:
				acked, refused, p50 := st.tick()
				rate := float64(acked-prev) / now.Sub(prevAt).Seconds()
				prev, prevAt = acked, now
				line := liveText(rate, acked, refused, p50)
				fmt.Fprintf(s.io.Err, "\r%s%s", line, strings.Repeat(" ", max(drawn-len(line), 0)))
				drawn = len(line)
			}
		}
	}()
	return l
}

func (l *liveLine) stop() {
	if l.stopc != nil {
		close(l.stopc)
		<-l.done
	}
}

// liveText is "12,345 frames/s  1,234,000 acked  0 refused  p50 ack 3.1 ms".
func liveText(rate float64, acked, refused int64, p50 time.Duration) string {
	return fmt.Sprintf("%s frames/s  %s acked  %s refused  p50 ack %s",
		groupDigits(int64(math.Round(rate))), groupDigits(acked), groupDigits(refused), millis(p50))
}

// millis renders a latency in milliseconds: "3.1 ms", "0.42 ms", "120 ms".
func millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.2f ms", ms)
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sendSummary is the --json summary of tier1 send.
type sendSummary struct {
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

// summary computes the figures of a finished run.
func (st *sendStats) summary(cfg sendConfig) sendSummary {
	st.mu.Lock()
	defer st.mu.Unlock()
	sum := sendSummary{
		Transport:  "websocket",
		FramesSent: st.framesSent, BatchesSent: st.batchesSent,
		Acknowledged: st.acked, Refused: st.refused, Unacknowledged: st.framesSent - st.acked - st.refused,
		Duplicates: st.duplicates, FirstError: st.firstErr, Interrupted: st.interrupted,
		DurationSeconds: st.end.Sub(st.start).Seconds(),
		AckP50Ms:        float64(percentile(st.latencies, 0.50)) / float64(time.Millisecond),
		AckP99Ms:        float64(percentile(st.latencies, 0.99)) / float64(time.Millisecond),
		WireBytes:       st.wireBytes,
	}
	if cfg.http {
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

// printSendSummary writes the summary of a run to standard output.
func printSendSummary(s *session, cfg sendConfig, sum sendSummary) error {
	if s.g.json {
		return s.printJSON(sum)
	}
	wire := "WebSocket messages"
	if cfg.http {
		wire = "HTTP bodies"
	}
	stopped := ""
	if sum.Interrupted {
		stopped = "interrupted"
	}
	dups := ""
	if sum.Duplicates > 0 {
		dups = groupDigits(sum.Duplicates) + " batches the agent had already stored"
	}
	unacked := ""
	if sum.Unacknowledged > 0 {
		unacked = groupDigits(sum.Unacknowledged) + " frames"
	}
	latency := ""
	if sum.Acknowledged+sum.Refused > 0 {
		latency = fmt.Sprintf("p50 %s, p99 %s", millis(time.Duration(sum.AckP50Ms*float64(time.Millisecond))),
			millis(time.Duration(sum.AckP99Ms*float64(time.Millisecond))))
	}
	printKV(s.io.Out, []kv{
		{"sent", fmt.Sprintf("%s frames in %s batches over %s", groupDigits(sum.FramesSent), groupDigits(sum.BatchesSent), sum.Transport)},
		{"acknowledged", groupDigits(sum.Acknowledged) + " frames"},
		{"refused", groupDigits(sum.Refused) + " frames"},
		{"first error", sum.FirstError},
		{"duplicates", dups},
		{"unacknowledged", unacked},
		{"stopped", stopped},
		{"duration", time.Duration(sum.DurationSeconds * float64(time.Second)).Round(time.Millisecond).String()},
		{"mean rate", groupDigits(int64(math.Round(sum.FramesPerSecond))) + " frames/s"},
		{"ack latency", latency},
		{"wire", fmt.Sprintf("%.1f bytes/frame (%s bytes of %s)", sum.BytesPerFrame, groupDigits(sum.WireBytes), wire)},
	})
	return nil
}
