package mqtt

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/southbound"
	"github.com/synapse-edge/synapse/wire"
)

// Ingester stores tier-1 batches durably; *tier1.Ingestor is one. cb gets
// the outcome once the batch is fsynced (or refused), in the order the
// batches were queued.
type Ingester interface {
	IngestAsync(ctx context.Context, scope, wantID string, body []byte, cb func(tier1.Result, error)) error
}

// Southbound subscribes to device topics (the mqtt section's southbound
// routes) and stores each message as a one-frame tier-1 batch through the
// same ingest path as the WebSocket: acknowledged (PUBACK) only once the
// batch is fsynced, so a message taken while the agent dies is delivered
// again by the broker (persistent session); stored once, because the
// batch_id is derived from the message (southbound.BatchID) and a batch_id
// seen before is acknowledged without storing.
//
// A message that cannot be mapped, or that the ingest refuses, is counted
// (Bad), logged and acknowledged: it never blocks the subscription. A
// batch that cannot be stored (the disk failed, or a reject_new routine's
// quota is full: storage_quota_exceeded) is not acknowledged; the broker
// keeps it and delivers it again on the next connection.
type Southbound struct {
	in     Ingester
	t      *Transport
	routes []*southbound.Mapping

	acks ackQueue

	// Stored counts messages stored, Duplicates those acknowledged as
	// already stored, Bad those refused, Failed those not stored for an
	// error of the agent (left unacknowledged).
	Stored, Duplicates, Bad, Failed atomic.Uint64
}

// AddSouthbound subscribes, from the next Start on, to the topic of each
// route and stores its messages through in. Call it before Start.
func (t *Transport) AddSouthbound(in Ingester, routes []*southbound.Mapping) (*Southbound, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c != nil {
		return nil, errors.New("mqtt: AddSouthbound after Start")
	}
	s := &Southbound{in: in, t: t, routes: routes}
	t.south = append(t.south, s)
	return s, nil
}

// subscribe registers the routes on c (before it connects).
func (s *Southbound) subscribe(ctx context.Context, c *Client) error {
	for _, m := range s.routes {
		if err := c.SubscribeAck(ctx, m.Route().Topic, s.handler(m)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Southbound) handler(m *southbound.Mapping) AckHandler {
	scope := "mqtt:" + m.Route().Topic
	return func(topic string, payload []byte, ack func()) {
		slot := s.acks.push(ack)
		body, err := m.Batch(nil, topic, payload)
		if err != nil {
			s.bad(topic, err)
			s.acks.done(slot)
			return
		}
		err = s.in.IngestAsync(s.t.bg, scope, m.Routine(), body, func(r tier1.Result, err error) {
			switch {
			case err != nil:
				s.refused(topic, err, slot)
			case r.Duplicate:
				s.Duplicates.Add(1)
				s.acks.done(slot)
			default:
				s.Stored.Add(1)
				s.acks.done(slot)
			}
		})
		if err != nil {
			s.refused(topic, err, slot)
		}
	}
}

// refused deals with an ingest error: the agent's own (the disk, a
// shutdown) leaves the message unacknowledged, anything else is the
// message's.
func (s *Southbound) refused(topic string, err error, slot *ackSlot) {
	var we *wire.Error
	if errors.As(err, &we) && (we.Code == wire.CodeSysStorage || we.Code == wire.CodeAgentNotReady || we.Code == wire.CodeStorageQuota) {
		n := s.Failed.Add(1)
		if n <= 10 || n&(n-1) == 0 {
			s.t.log.Error("mqtt: southbound message not stored; the broker will deliver it again on the next connection", "topic", topic, "err", err, "failed_total", n)
		}
		s.acks.drop(slot)
		return
	}
	s.bad(topic, err)
	s.acks.done(slot)
}

// bad counts and logs a refused message (the first ten, then at powers of
// two, so that a flood of bad messages does not flood the log).
func (s *Southbound) bad(topic string, err error) {
	n := s.Bad.Add(1)
	if n <= 10 || n&(n-1) == 0 {
		s.t.log.Warn("mqtt: southbound message refused", "topic", topic, "err", err, "refused_total", n)
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
	// paho queues each PUBACK on its outgoing channel, in call order.
	for _, a := range ready {
		a()
	}
}
