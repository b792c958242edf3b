package southbound

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// Ingester stores tier-1 batches durably; *tier1.Ingestor is one. cb gets
// the outcome once the batch is fsynced (or refused), in the order the
// batches were queued.
type Ingester interface {
	IngestAsync(ctx context.Context, scope, wantID string, body []byte, cb func(tier1.Result, error)) error
}

// Subscriber delivers the messages of a topic filter, from its next
// connection on, each with the function that acknowledges it; the MQTT
// transport is one (transport/mqtt's AddSubscription). The wire only
// delivers: what a message becomes is this package's.
type Subscriber interface {
	AddSubscription(topic string, h func(topic string, payload []byte, ack func())) error
}

// CompileAll compiles the southbound routes of the mqtt section against the
// routines of reg; an error names the route (mqtt.southbound[i]).
func CompileAll(routes []Route, reg *tier1.Registry) ([]*Mapping, error) {
	var out []*Mapping
	seen := map[string]bool{}
	for i, r := range routes {
		m, err := Compile(r, reg)
		if err != nil {
			return nil, fmt.Errorf("mqtt.southbound[%d].%w", i, err)
		}
		if seen[r.Topic] {
			return nil, fmt.Errorf("mqtt.southbound[%d].topic: %q is mapped twice", i, r.Topic)
		}
		seen[r.Topic] = true
		out = append(out, m)
	}
	return out, nil
}

// Bridge stores each device message of its routes as a one-frame tier-1
// batch through the same ingest path as the WebSocket: acknowledged
// (PUBACK) only once the batch is fsynced, so a message taken while the
// agent dies is delivered again by the broker (persistent session);
// stored once, because the batch_id is derived from the message (BatchID)
// and a batch_id seen before is acknowledged without storing.
//
// A message that cannot be mapped, or that the ingest refuses, is counted
// (Bad), logged and acknowledged: it never blocks the subscription. A
// batch that cannot be stored (the disk failed, or a reject_new routine's
// quota is full: storage_quota_exceeded) is not acknowledged; the broker
// keeps it and delivers it again on the next connection.
type Bridge struct {
	ctx context.Context
	in  Ingester
	log *slog.Logger

	acks ackQueue

	// Stored counts messages stored, Duplicates those acknowledged as
	// already stored, Bad those refused, Failed those not stored for an
	// error of the agent (left unacknowledged).
	Stored, Duplicates, Bad, Failed atomic.Uint64
}

// NewBridge subscribes through sub to the topic of each route and stores
// its messages through in, under ctx (the subscriber's own: a message
// whose ingest is cut short by it is left unacknowledged, for
// redelivery). Call it before the subscriber connects.
func NewBridge(ctx context.Context, sub Subscriber, in Ingester, routes []*Mapping, log *slog.Logger) (*Bridge, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{ctx: ctx, in: in, log: log}
	for _, m := range routes {
		if err := sub.AddSubscription(m.Route().Topic, b.handler(m)); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *Bridge) handler(m *Mapping) func(topic string, payload []byte, ack func()) {
	scope := "mqtt:" + m.Route().Topic
	return func(topic string, payload []byte, ack func()) {
		slot := b.acks.push(ack)
		body, err := m.Batch(nil, topic, payload)
		if err != nil {
			b.bad(topic, err)
			b.acks.done(slot)
			return
		}
		err = b.in.IngestAsync(b.ctx, scope, m.Routine(), body, func(r tier1.Result, err error) {
			switch {
			case err != nil:
				b.refused(topic, err, slot)
			case r.Duplicate:
				b.Duplicates.Add(1)
				b.acks.done(slot)
			default:
				b.Stored.Add(1)
				b.acks.done(slot)
			}
		})
		if err != nil {
			b.refused(topic, err, slot)
		}
	}
}

// refused deals with an ingest error: the agent's own (the disk, a
// shutdown) leaves the message unacknowledged, anything else is the
// message's.
func (b *Bridge) refused(topic string, err error, slot *ackSlot) {
	var we *wire.Error
	agents := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) // the bridge stopping
	if agents || errors.As(err, &we) && (we.Code == wire.CodeSysStorage || we.Code == wire.CodeAgentNotReady || we.Code == wire.CodeStorageQuota) {
		n := b.Failed.Add(1)
		if n <= 10 || n&(n-1) == 0 {
			b.log.Error("mqtt: southbound message not stored; the broker will deliver it again on the next connection", "topic", topic, "err", err, "failed_total", n)
		}
		b.acks.drop(slot)
		return
	}
	b.bad(topic, err)
	b.acks.done(slot)
}

// bad counts and logs a refused message (the first ten, then at powers of
// two, so that a flood of bad messages does not flood the log).
func (b *Bridge) bad(topic string, err error) {
	n := b.Bad.Add(1)
	if n <= 10 || n&(n-1) == 0 {
		b.log.Warn("mqtt: southbound message refused", "topic", topic, "err", err, "refused_total", n)
	}
}

// ackQueue sends acknowledgements in the order the messages arrived
// (MQTT 3.1.1 §4.6: PUBACKs in the order of the PUBLISH packets), each
// once its message is dealt with. A dropped slot is never acknowledged
// and holds back nothing behind it.
type ackQueue struct {
	mu   sync.Mutex
	q    []*ackSlot
	send sync.Mutex // held from taking acks off q until they are sent: keeps their order
}

type ackSlot struct {
	ack  func()
	done bool
}

func (q *ackQueue) push(ack func()) *ackSlot {
	s := &ackSlot{ack: ack}
	q.mu.Lock()
	q.q = append(q.q, s)
	q.mu.Unlock()
	return s
}

func (q *ackQueue) done(s *ackSlot) { q.finish(s, true) }

func (q *ackQueue) drop(s *ackSlot) { q.finish(s, false) }

func (q *ackQueue) finish(s *ackSlot, ack bool) {
	q.mu.Lock()
	s.done = true
	if !ack {
		s.ack = nil
	}
	var ready []func()
	for len(q.q) > 0 && q.q[0].done {
		if a := q.q[0].ack; a != nil {
			ready = append(ready, a)
		}
		q.q[0] = nil
		q.q = q.q[1:]
	}
	if len(ready) == 0 {
		q.mu.Unlock()
		return
	}
	q.send.Lock()
	q.mu.Unlock() // push does not wait for the network
	defer q.send.Unlock()
	// The subscriber queues each acknowledgement in call order (paho: on
	// its outgoing channel).
	for _, a := range ready {
		a()
	}
}
