package peer

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Ordered delivery between agents (pipelining; SPEC §6, "ordering").
//
// The outbox sends a window of messages to a peer at once. The envelope is
// contract and its signature covers fixed fields, so the order travels
// beside it, in two HTTP headers of the POST:
//
//	X-Synapse-Seq:      the message's outbox sequence number (decimal uint64;
//	                    increasing in queue order, not contiguous)
//	X-Synapse-Seq-Prev: the sequence number of the message queued before it
//	                    for this receiver that was not yet acknowledged when
//	                    it was sent, 0 when there is none
//
// A receiver that orders answers every POST /message with the header
// X-Synapse-Ordering: per-sender; a sender opens its window to a peer only
// after it has seen that header, and sends one message at a time until then
// (a receiver that does not know the headers ignores them and applies
// messages in arrival order, which is then the queue order).
//
// The receiver applies a sender's ordered messages one after another: a
// message waits (at most orderWait) until its predecessor has been applied
// or acknowledged as a duplicate — or is known not to come, because its
// sequence number is at most the highest one applied — then it is checked
// for duplicates, dispatched, and lets the next one go as soon as its store
// write is queued (the store applies writes in queue order, so effects keep
// the sender's order while many of them share one fsync). Answers are sent
// only after the write is durable. A message whose predecessor does not
// arrive in time is refused with 503 agent_not_ready (retriable); the sender
// sends it again with a fresh predecessor. A message whose predecessor
// failed (was refused) is refused at once, and so, in turn, is its
// successor: a failure in a window does not hold the rest of it for
// orderWait.
//
// The state is in memory: after a restart of the receiver, every message
// whose predecessor was not acknowledged is sent again by the sender, so
// the first message it gets either has no predecessor or is followed by
// its predecessor's retry. Exactly once is the message id's job (seen
// records), not the sequence's.
//
// Batches (p2p_batch.go) carry the same two numbers for each envelope.
//
// Limits: a dead letter that is requeued keeps its (old) sequence number,
// at most the highest one applied, so it is applied when it arrives, like
// any message whose predecessor is known not to come: the order around a
// message that had been given up is not restored. Messages without the
// headers are applied as they arrive; the WebSocket stream and the gRPC
// doors carry them too (peer/frame, call metadata) and are then ordered.

// Headers of ordered delivery.
const (
	HeaderSeq      = "X-Synapse-Seq"
	HeaderSeqPrev  = "X-Synapse-Seq-Prev"
	HeaderOrdering = "X-Synapse-Ordering"
	// OrderingPerSender is the value of HeaderOrdering.
	OrderingPerSender = "per-sender"
)

// orderWait bounds how long a message waits for its predecessor.
const orderWait = 3 * time.Second

// Sequence is the order of one received envelope (from its headers).
type Sequence struct {
	Seq, Prev uint64
}

// ParseSequence reads the two header values; ok is false when seq is
// absent or either value is not a decimal uint64 (the message is then
// handled without ordering).
func ParseSequence(seq, prev string) (Sequence, bool) {
	if seq == "" {
		return Sequence{}, false
	}
	s, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || s == 0 {
		return Sequence{}, false
	}
	var p uint64
	if prev != "" {
		if p, err = strconv.ParseUint(prev, 10, 64); err != nil || p >= s {
			return Sequence{}, false
		}
	}
	return Sequence{Seq: s, Prev: p}, true
}

type seqKey struct{}

// WithSequence marks ctx as carrying an ordered envelope (for Deliver).
func WithSequence(ctx context.Context, s Sequence) context.Context {
	return context.WithValue(ctx, seqKey{}, s)
}

// sequencer orders the messages of each sender.
type sequencer struct {
	mu      sync.Mutex
	senders map[string]*senderOrder
}

// senderOrder is the ordering state of one sender.
type senderOrder struct {
	applied uint64 // the highest sequence number applied
	failed  uint64 // the last one whose dispatch failed
	busy    bool   // a message is being dispatched
	// changed is closed (and replaced) when applied, failed or busy change.
	changed chan struct{}
	// told is closed when the message that last took the turn is done
	// with the feed (published or not): the next one publishes after it.
	told chan struct{}
}

// ticket is the turn of one message.
type ticket struct {
	end func(applied bool)
	// before is closed when the previous message is done with the feed;
	// told must be closed when this one is.
	before, told chan struct{}
}

type tellKey struct{}

// tell runs publish after the previous message of the sender (in ordered
// dispatch) has been published, so that observers of the feed see the
// sender's order; outside an ordered dispatch it runs it at once.
func tell(ctx context.Context, publish func()) {
	if t, ok := ctx.Value(tellKey{}).(*ticket); ok && t.before != nil {
		<-t.before
	}
	publish()
}

// turn waits until the message s of sender may be dispatched and returns
// its ticket: end ends its turn (applied: whether it took effect or was a
// duplicate). Only one message of a sender holds the turn at a time.
func (q *sequencer) turn(ctx context.Context, sender string, s Sequence) (*ticket, error) {
	timer := time.NewTimer(orderWait)
	defer timer.Stop()
	for { // each wait ends with a change of the sender's state
		q.mu.Lock()
		st := q.state(sender)
		ready := s.Prev == 0 || s.Prev <= st.applied || s.Seq <= st.applied
		if ready && !st.busy {
			st.busy = true
			t := &ticket{before: st.told, told: make(chan struct{})}
			st.told = t.told
			q.mu.Unlock()
			var once sync.Once
			t.end = func(applied bool) {
				once.Do(func() { q.end(st, s, applied) })
			}
			return t, nil
		}
		if !ready && s.Prev == st.failed {
			// Its successor, waiting for it, is refused at once too.
			st.failed = s.Seq
			close(st.changed)
			st.changed = make(chan struct{})
			q.mu.Unlock()
			return nil, wire.Errorf(wire.CodeAgentNotReady, "message %d waits for message %d, which failed: send both again", s.Seq, s.Prev)
		}
		ch := st.changed
		q.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return nil, wire.Errorf(wire.CodeAgentNotReady, "message %d waits for message %d, which has not arrived: send both again", s.Seq, s.Prev)
		case <-ctx.Done():
			return nil, wire.Errorf(wire.CodeAgentNotReady, "message %d waits for message %d: %v", s.Seq, s.Prev, ctx.Err())
		}
	}
}

// state is sender's state, made on first use; q.mu is held.
func (q *sequencer) state(sender string) *senderOrder {
	if q.senders == nil {
		q.senders = map[string]*senderOrder{}
	}
	st := q.senders[sender]
	if st == nil {
		st = &senderOrder{changed: make(chan struct{})}
		q.senders[sender] = st
	}
	return st
}

func (q *sequencer) end(st *senderOrder, s Sequence, applied bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if applied {
		st.applied = max(st.applied, s.Seq)
	} else {
		st.failed = s.Seq
	}
	st.busy = false
	close(st.changed)
	st.changed = make(chan struct{})
}

// refused records that message s of an authenticated sender was refused
// before its turn (its timestamp, its contract): the message waiting for
// it is refused at once.
func (q *sequencer) refused(sender string, s Sequence) {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.state(sender)
	if s.Seq <= st.applied {
		return
	}
	st.failed = s.Seq
	close(st.changed)
	st.changed = make(chan struct{})
}

// forget drops the state of a sender (unpaired).
func (q *sequencer) forget(sender string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.senders, sender)
}

// batchHold holds the store's writer while the envelopes of one batch
// (p2p_batch.go) take their turns, so that their writes share one commit
// (store.DB.Hold; a report's confirm, executing and outcome, one fsync):
// the hold ends once every envelope's turn has ended (its write queued)
// or it was answered, after the store's holdMax at the latest.
type batchHold struct {
	left    atomic.Int32
	release func()
}

type holdKey struct{}

// holdBatch holds the writer for a batch of count envelopes, when it is
// small (at most holdUpTo): a bigger one comes when the writer is busy
// anyway, and its envelopes share commits without a hold, which would
// only keep the writer idle while they take their turns.
func (ib *Inbound) holdBatch(count int) *batchHold {
	h := &batchHold{release: func() {}}
	if count <= holdUpTo {
		h.release = ib.db.Hold()
	}
	h.left.Store(int32(count))
	return h
}

// holdUpTo is the biggest batch holdBatch holds the writer for.
const holdUpTo = 8

// envelope returns the context of one envelope of the batch and the
// function that ends its part (safe to call more than once).
func (h *batchHold) envelope(ctx context.Context) (context.Context, func()) {
	var once sync.Once
	done := func() {
		once.Do(func() {
			if h.left.Add(-1) == 0 {
				h.release()
			}
		})
	}
	return context.WithValue(ctx, holdKey{}, done), done
}

// turnEnded tells the batch of ctx, if any, that its envelope's turn
// ended.
func turnEnded(ctx context.Context) {
	if f, ok := ctx.Value(holdKey{}).(func()); ok {
		f()
	}
}
