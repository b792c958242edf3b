package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// Limits and defaults of tier1 send.
const (
	// sendWindow is how many batches may wait for their acknowledgement:
	// the agent reads that many ahead of its answers on a stream.
	sendWindow = 32
	// httpSenders is how many batches --http keeps in flight.
	httpSenders = 8
	// maxSendBatch is the most frames per batch (the agent's default limit).
	maxSendBatch = 100_000
	// maxSendDevices bounds --devices.
	maxSendDevices = 1_000_000
	// interruptDrain bounds the wait for outstanding acknowledgements after
	// an interrupt.
	interruptDrain = 5 * time.Second
)

// sendConfig is what tier1 send was asked to do.
type sendConfig struct {
	rate     int           // frames per second; 0: as fast as acknowledgements allow
	batch    int           // frames per batch
	duration time.Duration // 0: no time limit
	frames   int64         // 0: no frame limit
	devices  int
	metric   string
	unit     string // "" leaves the optional unit out
	http     bool
	drain    time.Duration // wait this long for the last acknowledgements (0: no limit)
}

func tier1SendVerb() *verb {
	return &verb{
		name: "tier1 send", maxArgs: 0,
		summary: "generate synapse.telemetry load and measure the acknowledged rate",
		about: `Sends synthetic synapse.telemetry frames over the tier-1 WebSocket (or with
--http as POSTed batches) and counts the agent's acknowledgements, each sent
only once its batch is durable. Batches are pipelined: up to 32 wait for
their acknowledgement at a time. Devices are named dev-0001, dev-0002, ...;
each device's seq counts up from 1 and ts is the time of sending in unix
nanoseconds. Batch ids are HOSTNAME-PID-RUN-N, with RUN random per run (the
agent drops a batch whose id it has stored before).

It stops after --duration or --frames, whichever comes first (with --frames
alone there is no time limit), or on an interrupt, then waits up to --timeout
for the outstanding acknowledgements. On a terminal a live line shows the
rate on standard error; the summary (frames sent, acknowledged, refused with
the first error, duration, mean rate, acknowledgement latency p50/p99, bytes
per frame on the wire) goes to standard output. The exit code is 1 if any
batch was refused or the connection broke before every batch was
acknowledged.`,
		agent: true, timeout: defaultRequestTimeout,
		examples: []string{
			"synapse tier1 send",
			"synapse tier1 send --frames 1000000 --batch 500 --devices 100",
			"synapse tier1 send --rate 5000 --duration 1m --metric humidity --unit %",
			"synapse tier1 send --http --frames 10000 --json",
		},
		setup: func(fs *flag.FlagSet, s *session) runFunc {
			var cfg sendConfig
			fs.IntVar(&cfg.rate, "rate", 0, "send `N` frames per second (0: as fast as acknowledgements allow)")
			fs.IntVar(&cfg.batch, "batch", 100, "`N` frames per batch")
			fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "stop after `DURATION` (0: no limit)")
			fs.Int64Var(&cfg.frames, "frames", 0, "stop after `N` frames (0: no limit)")
			fs.IntVar(&cfg.devices, "devices", 10, "spread the frames over `N` devices")
			fs.StringVar(&cfg.metric, "metric", "temperature", "metric `NAME` of the frames")
			fs.StringVar(&cfg.unit, "unit", "", "`UNIT` of the values (default: left out)")
			fs.BoolVar(&cfg.http, "http", false, "POST each batch instead of using the WebSocket")
			return func(ctx context.Context, args []string) error {
				durationSet := false
				fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
				if cfg.frames > 0 && !durationSet {
					cfg.duration = 0
				}
				if err := cfg.validate(); err != nil {
					return err
				}
				cfg.drain = s.g.timeout
				st, err := runSend(ctx, s, cfg)
				if st == nil {
					return err
				}
				sum := st.summary(cfg)
				if perr := printSendSummary(s, cfg, sum); perr != nil && err == nil {
					err = perr
				}
				if err != nil {
					return err
				}
				if sum.Refused > 0 {
					return &exitError{code: ExitFailure, msg: fmt.Sprintf("synapse tier1 send: %s frames refused; first error: %s",
						groupDigits(sum.Refused), sum.FirstError)}
				}
				return nil
			}
		},
	}
}

func (c *sendConfig) validate() error {
	switch {
	case c.rate < 0:
		return usageErrorf("--rate %d: must not be negative", c.rate)
	case c.batch < 1 || c.batch > maxSendBatch:
		return usageErrorf("--batch %d: must be between 1 and %d", c.batch, maxSendBatch)
	case c.duration < 0:
		return usageErrorf("--duration %s: must not be negative", c.duration)
	case c.frames < 0:
		return usageErrorf("--frames %d: must not be negative", c.frames)
	case c.duration == 0 && c.frames == 0:
		return usageErrorf("give a limit: --duration or --frames")
	case c.devices < 1 || c.devices > maxSendDevices:
		return usageErrorf("--devices %d: must be between 1 and %d", c.devices, maxSendDevices)
	case c.metric == "":
		return usageErrorf("--metric must not be empty")
	}
	return nil
}

// pendingBatch is one batch on its way.
type pendingBatch struct {
	id     string
	frames int
	data   []byte
	sentAt time.Time
}

// batchGen makes the batches: devices in turn, each with its own seq.
type batchGen struct {
	cfg     sendConfig
	desc    tier1.Descriptor
	prefix  string // "HOSTNAME-PID-RUN-"
	devices []string
	seqs    []uint64
	turn    int
	batches int64
	frames  int64
	buf     []tier1.Frame
}

func newBatchGen(cfg sendConfig) *batchGen {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "synapse"
	}
	// The agent remembers batch ids to drop repeats, and process ids come
	// round again: a random run id keeps the batches of two runs apart.
	g := &batchGen{
		cfg: cfg, desc: tier1.Telemetry(),
		prefix:  fmt.Sprintf("%s-%d-%08x-", host, os.Getpid(), rand.Uint32()),
		devices: make([]string, cfg.devices),
		seqs:    make([]uint64, cfg.devices),
	}
	for i := range g.devices {
		g.devices[i] = fmt.Sprintf("dev-%04d", i+1)
	}
	return g
}

// next makes a batch of n frames stamped with the current time.
func (g *batchGen) next(n int) *pendingBatch {
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
			tier1.Str(g.cfg.metric), tier1.Float(v)}
		if g.cfg.unit != "" {
			f = append(f, tier1.Str(g.cfg.unit))
		}
		g.buf = append(g.buf, f)
	}
	g.frames += int64(n)
	id := g.prefix + strconv.FormatInt(g.batches, 10)
	data := tier1.AppendBatch(make([]byte, 0, 64+n*48), g.desc.CapabilityID, g.desc.Version, id, g.buf, &g.desc)
	return &pendingBatch{id: id, frames: n, data: data}
}

// errStopSending ends the send loop without an error of its own.
var errStopSending = errors.New("stop sending")

// produce makes batches at the configured pace and passes each to send
// until a limit is reached, ctx is cancelled or send returns an error;
// errStopSending from send ends it quietly. It reports whether ctx ended it.
func produce(ctx context.Context, cfg sendConfig, g *batchGen, send func(*pendingBatch) error) (interrupted bool, err error) {
	start := time.Now()
	var deadline time.Time
	if cfg.duration > 0 {
		deadline = start.Add(cfg.duration)
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		n := cfg.batch
		if cfg.frames > 0 {
			n = int(min(int64(n), cfg.frames-g.frames))
			if n <= 0 {
				return false, nil
			}
		}
		if cfg.rate > 0 {
			due := start.Add(time.Duration(float64(g.frames) / float64(cfg.rate) * float64(time.Second)))
			if !deadline.IsZero() && !due.Before(deadline) {
				return false, nil
			}
			if wait := time.Until(due); wait > 0 {
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
		if err := send(g.next(n)); err != nil {
			if errors.Is(err, errStopSending) {
				return ctx.Err() != nil, nil
			}
			return false, err
		}
	}
}

// runSend runs the load and returns its statistics; the error says why the
// run broke off. The statistics are nil when the run failed before any
// answer came, and worth printing otherwise.
func runSend(ctx context.Context, s *session, cfg sendConfig) (*sendStats, error) {
	st := newSendStats()
	g := newBatchGen(cfg)
	live := startLiveLine(s, st)
	var err error
	if cfg.http {
		err = sendHTTP(ctx, s, cfg, g, st)
	} else {
		err = sendWebSocket(ctx, s, cfg, g, st)
	}
	live.stop()
	st.finish()
	if err != nil && st.unanswered() == st.framesSentCount() {
		return nil, err // not one answer: the error says it all
	}
	return st, err
}

// drainFor is how long to wait for the last acknowledgements.
func drainFor(ctx context.Context, cfg sendConfig) time.Duration {
	d := cfg.drain
	if ctx.Err() != nil && (d == 0 || d > interruptDrain) {
		d = interruptDrain
	}
	return d
}

// sendWebSocket pipelines the batches over one tier-1 stream: this
// goroutine sends, a reader matches the in-order acknowledgements.
func sendWebSocket(ctx context.Context, s *session, cfg sendConfig, g *batchGen, st *sendStats) error {
	dctx, cancel := s.withTimeout(ctx)
	stream, err := s.client().DialTier1Stream(dctx)
	cancel()
	if err != nil {
		return err
	}
	defer stream.Close()
	r := &ackReader{
		stream:   stream,
		slots:    make(chan struct{}, sendWindow),
		inflight: make(chan *pendingBatch, sendWindow),
		done:     make(chan struct{}),
		st:       st,
	}
	go r.run()
	interrupted, sendErr := produce(ctx, cfg, g, func(b *pendingBatch) error {
		select {
		case r.slots <- struct{}{}:
		case <-r.done:
			return errStopSending
		case <-ctx.Done():
			return errStopSending
		}
		b.sentAt = time.Now()
		st.sent(b, len(b.data)+client.WebSocketOverhead(len(b.data)))
		r.inflight <- b // never blocks: a slot is held for it
		return stream.Send(b.data)
	})
	st.stopped(interrupted)
	if errors.Is(sendErr, client.ErrTier1StreamClosing) {
		// Only the reader answering the agent's close frame sends one
		// before us, and its Receive returns right after: wait for it, so
		// the agent's reason (1009, message too big) is what is reported.
		<-r.done
	}
	// Every slot free again means every batch sent was answered.
	if sendErr == nil {
		var timeout <-chan time.Time
		if d := drainFor(ctx, cfg); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
	wait:
		for range sendWindow {
			select {
			case r.slots <- struct{}{}:
			case <-r.done:
				break wait
			case <-timeout:
				break wait
			}
		}
	}
	r.closing.Store(true)
	stream.Close()
	<-r.done
	missing := st.unanswered()
	if missing == 0 {
		return nil // every batch was answered, whatever happened after
	}
	cause := sendErr
	if r.brokeFirst {
		cause = r.err // the agent closed the stream, or it broke
	}
	if cause == nil {
		cause = fmt.Errorf("no acknowledgement within --timeout %s", drainFor(ctx, cfg))
	}
	return fmt.Errorf("%s frames unacknowledged: %w", groupDigits(missing), cause)
}

// ackReader reads the acknowledgements of a tier-1 stream in order.
type ackReader struct {
	stream   *client.Tier1Stream
	slots    chan struct{}      // one per batch awaiting its answer
	inflight chan *pendingBatch // the batches in the order sent
	done     chan struct{}      // closed when run returns
	closing  atomic.Bool        // set before the sender closes the stream
	// err is why run returned, and brokeFirst whether that happened before
	// the sender closed the stream; read them after done.
	err        error
	brokeFirst bool
	st         *sendStats
}

func (r *ackReader) run() {
	defer close(r.done)
	defer func() { r.brokeFirst = r.err != nil && !r.closing.Load() }()
	for {
		data, err := r.stream.Receive()
		if err != nil {
			r.err = err
			return
		}
		now := time.Now()
		var b *pendingBatch
		select {
		case b = <-r.inflight:
		default:
			r.err = errors.New("tier-1 stream: an acknowledgement came for no batch")
			return
		}
		var ack client.Tier1Ack
		if err := wire.Msgpack.Unmarshal(data, &ack); err != nil {
			r.err = fmt.Errorf("tier-1 stream: decode the acknowledgement of batch %s: %w", b.id, err)
			return
		}
		if ack.BatchID != "" && ack.BatchID != b.id {
			r.err = fmt.Errorf("tier-1 stream: acknowledgement of batch %s came when %s was next", ack.BatchID, b.id)
			return
		}
		r.st.answer(b, &ack, now)
		<-r.slots
	}
}

// sendHTTP posts the batches from httpSenders goroutines at once.
func sendHTTP(ctx context.Context, s *session, cfg sendConfig, g *batchGen, st *sendStats) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = httpSenders
	defer tr.CloseIdleConnections()
	tok, _ := s.token()
	c := client.New(s.g.agent, tok, client.WithUserAgent("synapse-cli/"+Version),
		client.WithHTTPClient(&http.Client{Transport: tr}))
	// Requests outlive an interrupt: the batches sent are waited for.
	rctx := context.WithoutCancel(ctx)
	jobs := make(chan *pendingBatch)
	failed := make(chan struct{})
	var (
		failOnce sync.Once
		failErr  error
		wg       sync.WaitGroup
	)
	for range httpSenders {
		wg.Go(func() {
			for b := range jobs {
				if err := postBatch(rctx, cfg, c, b, st); err != nil {
					failOnce.Do(func() { failErr = err; close(failed) })
				}
			}
		})
	}
	interrupted, sendErr := produce(ctx, cfg, g, func(b *pendingBatch) error {
		select {
		case jobs <- b:
			return nil
		case <-failed:
			return errStopSending
		case <-ctx.Done():
			return errStopSending
		}
	})
	close(jobs)
	wg.Wait()
	st.stopped(interrupted)
	if sendErr == nil {
		sendErr = failErr
	}
	if missing := st.unanswered(); missing > 0 && sendErr != nil {
		return fmt.Errorf("%s frames unacknowledged: %w", groupDigits(missing), sendErr)
	}
	return sendErr
}

// postBatch sends one batch over HTTP and records the answer. An error
// answer about the batch counts as a refusal; one about the request (no
// token, no scope, no route) and any other failure is returned.
func postBatch(ctx context.Context, cfg sendConfig, c *client.Client, b *pendingBatch, st *sendStats) error {
	if cfg.drain > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.drain)
		defer cancel()
	}
	b.sentAt = time.Now()
	st.sent(b, len(b.data))
	ack, err := c.IngestTier1(ctx, tier1.Telemetry().CapabilityID, b.data)
	now := time.Now()
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Status != http.StatusUnauthorized && apiErr.Status != http.StatusForbidden &&
		apiErr.Status != http.StatusNotFound:
		ack = &client.Tier1Ack{BatchID: b.id, Error: &client.Tier1AckError{Code: apiErr.Code, Message: apiErr.Message}}
	case err != nil:
		return err
	}
	st.answer(b, ack, now)
	return nil
}
