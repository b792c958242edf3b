package tier1load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/synapse-edge/synapse/tier1"
)

// Limits of a run.
const (
	// DefaultWindow is how many batches may wait for their
	// acknowledgement on a stream unless Config.Window says otherwise.
	// A stream's rate is at most its window over the time a batch takes
	// to be answered (one group commit and its fdatasync, about a
	// millisecond here under load): 32 would cap one-frame batches near
	// 16k frames/s however fast the agent is, 1024 leaves room for a
	// million. The agent reads up to 4096 ahead (Tier1ReadAhead), each
	// batch charged at least 512 bytes of its 16 MiB in-flight budget, so
	// 1024 one-frame batches hold 512 KiB of it; an acknowledgement then
	// waits about 10 ms at 100k frames/s.
	DefaultWindow = 1024
	// MaxWindow bounds Config.Window. Beyond the agent's read-ahead the
	// batches wait in the connection's buffers (the agent stops reading,
	// its back-pressure), costing latency and buying nothing.
	MaxWindow = 65536
	// HTTPSenders is how many batches a run over HTTP keeps in flight.
	HTTPSenders = 8
	// MaxBatch is the most frames per batch (the agent's default limit).
	MaxBatch = 100_000
	// MaxDevices bounds Config.Devices.
	MaxDevices = 1_000_000
	// InterruptDrain bounds the wait for outstanding acknowledgements after
	// an interrupt.
	InterruptDrain = 5 * time.Second
)

// Config is what a run is asked to do.
type Config struct {
	Rate     int           // frames per second; 0: as fast as acknowledgements allow
	Batch    int           // frames per batch
	Window   int           // batches awaiting their acknowledgement at once (WebSocket); 0: DefaultWindow
	Duration time.Duration // 0: no time limit
	Frames   int64         // 0: no frame limit
	Devices  int
	Metric   string
	Unit     string        // "" leaves the optional unit out
	HTTP     bool          // POST each batch instead of using the WebSocket
	Drain    time.Duration // wait this long for the last acknowledgements (0: no limit)
}

// Batch is one batch on its way.
type Batch struct {
	ID     string
	Frames int
	Data   []byte
	SentAt time.Time
}

// Gen makes the batches: devices in turn, each with its own seq.
type Gen struct {
	cfg     Config
	desc    tier1.Descriptor
	prefix  string // "HOSTNAME-PID-RUN-"
	devices []string
	seqs    []uint64
	turn    int
	batches int64
	frames  int64
	buf     []tier1.Frame
}

// NewGen returns the generator of a run. Batch ids are HOSTNAME-PID-RUN-N
// with RUN random per run: the agent remembers batch ids to drop repeats,
// and process ids come round again.
func NewGen(cfg Config) *Gen {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "synapse"
	}
	g := &Gen{
		cfg: cfg, desc: tier1.Telemetry(),
		prefix:  fmt.Sprintf("%s-%d-%08x-", host, os.Getpid(), rand.Uint32()),
		devices: make([]string, cfg.Devices),
		seqs:    make([]uint64, cfg.Devices),
	}
	for i := range g.devices {
		g.devices[i] = fmt.Sprintf("dev-%04d", i+1)
	}
	return g
}

// Next makes a batch of n frames stamped with the current time.
func (g *Gen) Next(n int) *Batch {
	g.batches++
	g.buf = g.buf[:0]
	for range n {
		d := g.turn
		g.turn = (g.turn + 1) % len(g.devices)
		g.seqs[d]++
		seq := g.seqs[d]
		// A smooth signal per device in steps of 1/16, which float32
		// holds exactly (5 bytes on the wire) and JSON prints briefly.
		v := math.Round((20+5*math.Sin(float64(seq)/50+float64(d)))*16) / 16
		f := tier1.Frame{tier1.Str(g.devices[d]), tier1.Uint(seq), tier1.Int(time.Now().UnixNano()),
			tier1.Str(g.cfg.Metric), tier1.Float(v)}
		if g.cfg.Unit != "" {
			f = append(f, tier1.Str(g.cfg.Unit))
		}
		g.buf = append(g.buf, f)
	}
	g.frames += int64(n)
	id := g.prefix + strconv.FormatInt(g.batches, 10)
	data := tier1.AppendBatch(make([]byte, 0, 64+n*48), g.desc.CapabilityID, g.desc.Version, id, g.buf, &g.desc)
	return &Batch{ID: id, Frames: n, Data: data}
}

// ErrStop, returned by Produce's send, ends the run without an error of
// its own.
var ErrStop = errors.New("stop sending")

// Produce makes batches at the configured pace and passes each to send
// until a limit is reached, ctx is cancelled or send returns an error;
// ErrStop from send ends it quietly. It reports whether ctx ended it.
func Produce(ctx context.Context, cfg Config, g *Gen, send func(*Batch) error) (interrupted bool, err error) {
	return produce(ctx, cfg, g, send, nil)
}

// produce is Produce calling flush, when not nil, before it waits for a
// batch's time (a paced run): what send buffered goes out on time.
func produce(ctx context.Context, cfg Config, g *Gen, send func(*Batch) error, flush func() error) (interrupted bool, err error) {
	start := time.Now()
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Duration)
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		n := cfg.Batch
		if cfg.Frames > 0 {
			n = int(min(int64(n), cfg.Frames-g.frames))
			if n <= 0 {
				return false, nil
			}
		}
		if cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(g.frames) / float64(cfg.Rate) * float64(time.Second)))
			if !deadline.IsZero() && !due.Before(deadline) {
				return false, nil
			}
			if wait := time.Until(due); wait > 0 {
				if flush != nil {
					if err := flush(); err != nil {
						return false, err
					}
					wait = time.Until(due)
				}
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-ctx.Done():
					return true, nil
				case <-timer.C:
				}
			}
		}
		if ctx.Err() != nil {
			return true, nil
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return false, nil
		}
		if err := send(g.Next(n)); err != nil {
			if errors.Is(err, ErrStop) {
				return ctx.Err() != nil, nil
			}
			return false, err
		}
	}
}
