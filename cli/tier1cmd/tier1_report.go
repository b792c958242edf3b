package tier1cmd

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client/tier1load"
)

// liveLine redraws one line of progress on a terminal once per second.
type liveLine struct {
	stopc chan struct{}
	done  chan struct{}
}

// startLiveLine starts the live line on standard error when that is a
// terminal; otherwise stop does nothing.
func startLiveLine(s *command.Session, st *tier1load.Stats) *liveLine {
	if !command.IsTerminal(s.IO.Err) {
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
					fmt.Fprintf(s.IO.Err, "\r%s\r", strings.Repeat(" ", drawn))
				}
				return
			case now := <-t.C:
				acked, refused, p50 := st.Tick()
				rate := float64(acked-prev) / now.Sub(prevAt).Seconds()
				prev, prevAt = acked, now
				line := liveText(rate, acked, refused, p50)
				fmt.Fprintf(s.IO.Err, "\r%s%s", line, strings.Repeat(" ", max(drawn-len(line), 0)))
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

// printSendSummary writes the summary of a run to standard output.
func printSendSummary(s *command.Session, cfg tier1load.Config, sum tier1load.Summary) error {
	if s.Flags.JSON {
		return s.PrintJSON(sum)
	}
	wire := "WebSocket messages"
	if cfg.HTTP {
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
	command.PrintKV(s.IO.Out, []command.KV{
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
