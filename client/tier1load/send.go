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
	"github.com/synapse-edge/synapse/wire"
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
// goroutine sends, a reader matches the in-order acknowledgements.
func runWebSocket(ctx context.Context, cfg Config, dial func(context.Context) (*client.Tier1Stream, error), g *Gen, st *Stats) error {
	stream, err := dial(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	r := &ackReader{
		stream:   stream,
		slots:    make(chan struct{}, Window),
		inflight: make(chan *Batch, Window),
		done:     make(chan struct{}),
		st:       st,
	}
	go r.run()
	interrupted, sendErr := Produce(ctx, cfg, g, func(b *Batch) error {
		select {
		case r.slots <- struct{}{}:
		case <-r.done:
			return ErrStop
		case <-ctx.Done():
			return ErrStop
		}
		b.SentAt = time.Now()
		st.Sent(b, len(b.Data)+client.WebSocketOverhead(len(b.Data)))
		r.inflight <- b // never blocks: a slot is held for it
		return stream.Send(b.Data)
	})
	st.Stopped(interrupted)
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
		for range Window {
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
	slots    chan struct{} // one per batch awaiting its answer
	inflight chan *Batch   // the batches in the order sent
	done     chan struct{} // closed when run returns
	closing  atomic.Bool   // set before the sender closes the stream
	// err is why run returned, and brokeFirst whether that happened before
	// the sender closed the stream; read them after done.
	err        error
	brokeFirst bool
	st         *Stats
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
		var b *Batch
		select {
		case b = <-r.inflight:
		default:
			r.err = errors.New("tier-1 stream: an acknowledgement came for no batch")
			return
		}
		var ack client.Tier1Ack
		if err := wire.Msgpack.Unmarshal(data, &ack); err != nil {
			r.err = fmt.Errorf("tier-1 stream: decode the acknowledgement of batch %s: %w", b.ID, err)
			return
		}
		if ack.BatchID != "" && ack.BatchID != b.ID {
			r.err = fmt.Errorf("tier-1 stream: acknowledgement of batch %s came when %s was next", ack.BatchID, b.ID)
			return
		}
		r.st.Answer(b, &ack, now)
		<-r.slots
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
