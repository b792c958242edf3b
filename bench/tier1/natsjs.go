package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// The JetStream stream the benchmark writes to.
const (
	natsStream  = "TELEMETRY"
	natsSubject = "telemetry.gateway-0042"
)

// natsClient is a connection with JetStream and the stream created.
type natsClient struct {
	nc *nats.Conn
	js nats.JetStreamContext
}

// dialNATS connects to addr (host:port) and creates (or finds) the file
// stream on telemetry.>, with at most window publishes unacknowledged.
func dialNATS(addr string, window int) (*natsClient, error) {
	nc, err := nats.Connect("nats://"+addr, nats.Name("tier1bench"), nats.Timeout(10*time.Second),
		nats.NoReconnect())
	if err != nil {
		return nil, fmt.Errorf("nats connect %s: %w", addr, err)
	}
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(window))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats jetstream: %w", err)
	}
	_, err = js.AddStream(&nats.StreamConfig{
		Name:     natsStream,
		Subjects: []string{"telemetry.>"},
		Storage:  nats.FileStorage,
	})
	if err != nil && !errors.Is(err, nats.ErrStreamNameAlreadyInUse) {
		nc.Close()
		return nil, fmt.Errorf("nats add stream: %w", err)
	}
	return &natsClient{nc: nc, js: js}, nil
}

func (n *natsClient) close() { n.nc.Close() }

// publish sends msgs with js.PublishAsync and waits for every ack. It
// returns the time from the first publish to the last ack.
func (n *natsClient) publish(ctx context.Context, msgs [][]byte) (time.Duration, error) {
	futures := make([]nats.PubAckFuture, len(msgs))
	start := time.Now()
	for i, m := range msgs {
		f, err := n.publishOne(ctx, m)
		if err != nil {
			return 0, fmt.Errorf("nats publish %d: %w", i, err)
		}
		futures[i] = f
	}
	select {
	case <-n.js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, fmt.Errorf("nats: waiting for acks: %w", ctx.Err())
	}
	elapsed := time.Since(start)
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return 0, fmt.Errorf("nats publish %d: %w", i, err)
		default:
			return 0, fmt.Errorf("nats publish %d: not acknowledged", i)
		}
	}
	return elapsed, nil
}

// publishOne publishes m, retrying while the client's pending window is
// full for longer than its stall wait (200 ms).
func (n *natsClient) publishOne(ctx context.Context, m []byte) (nats.PubAckFuture, error) {
	for {
		f, err := n.js.PublishAsync(natsSubject, m)
		if !errors.Is(err, nats.ErrTooManyStalledMsgs) {
			return f, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", err, ctx.Err())
		}
	}
}
