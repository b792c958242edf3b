package tier1load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
)

// Target is the agent a run sends to.
type Target struct {
	// Dial opens the tier-1 stream of a WebSocket run.
	Dial func(ctx context.Context) (*client.Tier1Stream, error)
	// Client posts the batches of an HTTP run; its HTTP client should keep
	// HTTPSenders connections open.
	Client *client.Client
}

// Run sends the load cfg asks for to t, recording every batch and answer in
// st. The error says why the run broke off; st is worth reading either way.
func Run(ctx context.Context, cfg Config, t Target, st *Stats) error {
	g := NewGen(cfg)
	if cfg.HTTP {
		return runHTTP(ctx, cfg, t.Client, g, st)
	}
	return runWebSocket(ctx, cfg, t.Dial, g, st)
}

// drainFor is how long to wait for the last acknowledgements.
func drainFor(ctx context.Context, cfg Config) time.Duration {
	d := cfg.Drain
	if ctx.Err() != nil && (d == 0 || d > InterruptDrain) {
		d = InterruptDrain
	}
	return d
}

// runWebSocket pipelines the batches over one tier-1 stream: this
// goroutine sends, a reader matches the in-order acknowledgements. Up to
// the window's batches wait for their answers; the sender buffers them
// (Tier1Stream.Queue) and writes when its buffer is full, when the window
// is, and before it waits for a paced batch's time, so that a run of small
// batches costs one write for many of them, not one each.
func runWebSocket(ctx context.Context, cfg Config, dial func(context.Context) (*client.Tier1Stream, error), g *Gen, st *Stats) error {
	stream, err := dial(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	size := int64(cfg.Window)
	if size <= 0 {
		size = DefaultWindow
	}
	r := &ackReader{
		stream:   stream,
		size:     size,
		wake:     make(chan struct{}, 1),
		inflight: make(chan *Batch, size),
		done:     make(chan struct{}),
		st:       st,
	}
	go r.run()
	var sent int64
	interrupted, sendErr := produce(ctx, cfg, g, func(b *Batch) error {
		if sent-r.answered.Load() >= size {
			if err := stream.Flush(); err != nil {
				return err
			}
			// Wait for a quarter of the window: woken for each answer,
			// the sender would write one batch at a time.
			if !r.waitUntil(sent, size-max(size/4, 1), ctx.Done(), nil) {
				return ErrStop
			}
		}
		b.SentAt = time.Now()
		st.Sent(b, len(b.Data)+client.WebSocketOverhead(len(b.Data)))
		r.inflight <- b // never blocks: at most size are in flight
		sent++
		r.sent.Store(sent)
		return stream.Queue(b.Data)
	}, stream.Flush)
	if sendErr == nil {
		sendErr = stream.Flush()
	}
	st.Stopped(interrupted)
	if sendErr != nil {
		// The agent may have closed the stream (1009, message too big):
		// give the reader a moment to read why, so that its reason is
		// what is reported.
		t := time.NewTimer(time.Second)
		select {
		case <-r.done:
		case <-t.C:
		}
		t.Stop()
	}
	// Wait for every batch sent to be answered.
	if sendErr == nil {
		var timeout <-chan time.Time
		if d := drainFor(ctx, cfg); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		r.waitUntil(sent, 0, nil, timeout)
	}
	r.closing.Store(true)
	stream.Close()
	<-r.done
	missing := st.Unanswered()
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
	return fmt.Errorf("%d frames unacknowledged: %w", missing, cause)
}

// ackReader reads the acknowledgements of a tier-1 stream in order.
type ackReader struct {
	stream   *client.Tier1Stream
	size     int64         // the window
	sent     atomic.Int64  // batches sent, stored by the sender
	answered atomic.Int64  // batches answered, stored by the reader
	waiting  atomic.Int64  // the sender sleeps on wake until sent-answered is at most waiting-1 (0: it does not)
	wake     chan struct{} // poked by the reader when the sender may go on
	inflight chan *Batch   // the batches in the order sent
	done     chan struct{} // closed when run returns
	closing  atomic.Bool   // set before the sender closes the stream
	// err is why run returned, and brokeFirst whether that happened before
	// the sender closed the stream; read them after done.
	err        error
	brokeFirst bool
	st         *Stats
}

// waitUntil waits until at most limit of the sent batches are
// unanswered, the reader ends, stop is closed or timeout fires; it
// reports whether the batches were answered.
func (r *ackReader) waitUntil(sent, limit int64, stop <-chan struct{}, timeout <-chan time.Time) bool {
	defer r.waiting.Store(0)
	for {
		r.waiting.Store(limit + 1)
		if sent-r.answered.Load() <= limit {
			return true
		}
		select {
		case <-r.wake:
		case <-r.done:
			return sent-r.answered.Load() <= limit
		case <-stop:
			return false
		case <-timeout:
			return false
		}
	}
}

func (r *ackReader) run() {
	defer close(r.done)
	defer func() { r.brokeFirst = r.err != nil && !r.closing.Load() }()
	var ack client.Tier1Ack
	for {
		data, err := r.stream.Receive()
		if err != nil {
			r.err = err
			return
		}
		now := time.Now()
		var b *Batch
		select {
		case b = <-r.inflight:
		default:
			r.err = errors.New("tier-1 stream: an acknowledgement came for no batch")
			return
		}
		if err := client.DecodeTier1Ack(data, &ack); err != nil {
			r.err = fmt.Errorf("tier-1 stream: decode the acknowledgement of batch %s: %w", b.ID, err)
			return
		}
		if ack.BatchID != "" && ack.BatchID != b.ID {
			r.err = fmt.Errorf("tier-1 stream: acknowledgement of batch %s came when %s was next", ack.BatchID, b.ID)
			return
		}
		r.st.Answer(b, &ack, now)
		answered := r.answered.Add(1)
		if w := r.waiting.Load(); w > 0 && r.sent.Load()-answered < w {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}
}

// runHTTP posts the batches from HTTPSenders goroutines at once.
func runHTTP(ctx context.Context, cfg Config, c *client.Client, g *Gen, st *Stats) error {
	// Requests outlive an interrupt: the batches sent are waited for.
	rctx := context.WithoutCancel(ctx)
	jobs := make(chan *Batch)
	failed := make(chan struct{})
	var (
		failOnce sync.Once
		failErr  error
		wg       sync.WaitGroup
	)
	for range HTTPSenders {
		wg.Go(func() {
			for b := range jobs {
				if err := postBatch(rctx, cfg, c, b, st); err != nil {
					failOnce.Do(func() { failErr = err; close(failed) })
				}
			}
		})
	}
	interrupted, sendErr := Produce(ctx, cfg, g, func(b *Batch) error {
		select {
		case jobs <- b:
			return nil
		case <-failed:
			return ErrStop
		case <-ctx.Done():
			return ErrStop
		}
	})
	close(jobs)
	wg.Wait()
	st.Stopped(interrupted)
	if sendErr == nil {
		sendErr = failErr
	}
	if missing := st.Unanswered(); missing > 0 && sendErr != nil {
		return fmt.Errorf("%d frames unacknowledged: %w", missing, sendErr)
	}
	return sendErr
}

// postBatch sends one batch over HTTP and records the answer. An error
// answer about the batch counts as a refusal; one about the request (401
// no token, 403 no scope, 404 no route) and any other failure is returned.
func postBatch(ctx context.Context, cfg Config, c *client.Client, b *Batch, st *Stats) error {
	if cfg.Drain > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Drain)
		defer cancel()
	}
	b.SentAt = time.Now()
	st.Sent(b, len(b.Data))
	ack, err := c.IngestTier1(ctx, tier1.Telemetry().CapabilityID, b.Data)
	now := time.Now()
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Status != 401 && apiErr.Status != 403 && apiErr.Status != 404:
		ack = &client.Tier1Ack{BatchID: b.ID, Error: &client.Tier1AckError{Code: apiErr.Code, Message: apiErr.Message}}
	case err != nil:
		return err
	}
	st.Answer(b, ack, now)
	return nil
}
