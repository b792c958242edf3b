package peer

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// The outbox's peer side. Package outbox delivers the durable outbox
// (its lanes, rounds, delivery slots, retries and dead letters: see its
// doc) and the plain webhooks; what a round to a peer is belongs here,
// in the deliverer, which the queue reaches as outbox.Peers: whether the
// peer is still paired, its windows (ordered delivery, p2p_order.go),
// batches (p2p_batch.go), the message signed under the peer's contract
// (contracts.go), and what an answer tells of the peer (pairing.go: it
// accepted, refused, or was heard from: its dead letters are requeued).
// The A2A push notifications are a delivery per type the queue is given
// (a2a_push.go).
//
// Pipelining (p2p_order.go): a round to a peer that announced ordered
// delivery sends up to peerWindow messages at once, each with its
// sequence number and its predecessor's; the peer applies them in that
// order and its group commit gives them one fsync. To a peer that also
// announced batches (p2p_batch.go, over http and https) a round sends up
// to batchWindow messages as batches of batchChunk, one request and one
// answer each. Webhooks, and peers until they have announced ordering,
// get one message per round.

const (
	// peerWindow is how many messages a round sends at once to a peer
	// that orders them, one request each.
	peerWindow = 32
	// batchWindow is how many a round sends at once to a peer that takes
	// batches (p2p_batch.go), in batches of batchChunk: several batches
	// in flight let the sender sign one while the receiver applies
	// another.
	batchWindow = 128
	batchChunk  = 64
)

// deliverer is the peer protocol of the outbox's rounds
// (outbox.Peers); its state is what the peers' answers announced.
type deliverer struct {
	n   *Network
	log *slog.Logger

	mu sync.Mutex
	// ordered holds the peers (destinations) that announced ordered
	// delivery (their windows are open); batches, those that announced
	// batches (p2p_batch.go).
	ordered    map[string]bool
	batches    map[string]batchTerms
	batchesOff map[string]time.Time // when a peer refused a batch
}

var _ outbox.Peers = (*deliverer)(nil)

// newOutbox builds the network's outbox queue and its deliverer; n's
// store, clock and metrics are set.
func newOutbox(n *Network) *outbox.Queue {
	d := &deliverer{n: n, log: n.log.With("component", "outbox"),
		ordered: map[string]bool{}, batches: map[string]batchTerms{}, batchesOff: map[string]time.Time{}}
	return outbox.New(n.ctx, outbox.Options{DB: n.db, Transport: n.t, Clock: n.clock, Go: n.spawn,
		Logger: n.log, Peers: d, Secret: n.secret, MaxRetries: n.p2p.MaxRetries, RetryBase: n.p2p.RetryBaseDelay(),
		Metrics: outbox.Metrics{Queued: n.m.queued, Delivered: n.m.delivered, Retries: n.m.retries, Dead: n.m.dead, FullWindows: n.m.fullWindows},
		Deliver: map[string]func(context.Context, *outbox.Item) *outbox.Failure{A2APushType: d.deliverA2APush}})
}

// enqueue writes m to q in tx; its lane is poked when tx commits.
func enqueue(q *outbox.Queue, tx *store.Tx, m agent.Outgoing) error {
	_, err := q.Enqueue(tx, outgoing(m))
	return err
}

// outgoing is the engine's message as the outbox queues it.
func outgoing(m agent.Outgoing) outbox.Message {
	return outbox.Message{Peer: m.Peer, URL: m.URL, Type: m.Type, CorrelationID: m.CorrelationID, Payload: m.Payload}
}

// ReadAhead is how many items a round of dest reads (0: the outbox's
// default).
func (o *deliverer) ReadAhead(dest string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.batches[dest].max > 0 {
		return batchWindow
	}
	return 0
}

// Window is how many messages a round to dest sends: peerWindow at once
// to a peer that orders them (batchWindow to one that takes batches),
// one otherwise.
func (o *deliverer) Window(dest string) (size int, concurrent bool) {
	size = 1
	o.mu.Lock()
	concurrent = o.ordered[dest]
	if concurrent {
		size = peerWindow
	}
	if concurrent && o.batches[dest].max > 0 {
		size = batchWindow
	}
	o.mu.Unlock()
	return size, concurrent
}

// Send delivers the items of one round to a peer and returns their
// outcomes in order. Each message carries its sequence number and its
// predecessor's in the round (the head has none: everything before it
// was delivered or given up).
func (o *deliverer) Send(ctx context.Context, dest, peerID string, items []*outbox.Item, concurrent bool) []*outbox.Failure {
	p, derr := o.ready(peerID)
	if derr != nil {
		out := make([]*outbox.Failure, len(items))
		for i := range out {
			out[i] = derr
		}
		return out
	}
	if !concurrent {
		return outbox.SendInTurn(items, func(it *outbox.Item) *outbox.Failure {
			return o.deliverPeer(ctx, dest, p, it, Sequence{Seq: it.Seq})
		})
	}
	if max := o.batchable(dest, p); max > 0 && len(items) > 1 {
		return o.sendBatches(ctx, dest, p, items, min(max, batchChunk))
	}
	out := make([]*outbox.Failure, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		s := Sequence{Seq: it.Seq}
		if i > 0 {
			s.Prev = items[i-1].Seq
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = o.deliverPeer(ctx, dest, p, it, s)
		}()
	}
	wg.Wait()
	return out
}

// ready is called before a round sends to a peer: the peer must still be
// paired. What must hold before anything is sent to a peer is checked here.
func (o *deliverer) ready(peerID string) (*peer, *outbox.Failure) {
	p := o.n.pairing.peers.get(peerID)
	if p == nil {
		return nil, &outbox.Failure{Err: fmt.Errorf("%s is not a paired peer", peerID), Permanent: true}
	}
	return p, nil
}

// deliverPeer sends one message to a peer, with its sequence, within
// deliveryTimeout of ctx (the queue's).
func (o *deliverer) deliverPeer(ctx context.Context, dest string, p *peer, it *outbox.Item, s Sequence) *outbox.Failure {
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	pl, err := wire.RawJSONPayload(it.Payload)
	if err != nil {
		return &outbox.Failure{Err: fmt.Errorf("stored payload: %w", err), Permanent: true}
	}
	out, derr := o.n.contractor.send(ctx, p, wire.MessageType(it.Type), it.ID, it.CorrelationID, pl, s)
	if derr == nil {
		o.heardAnswer(dest, out)
	}
	if derr == nil {
		derr = outbox.FailureOf(out)
	}
	if derr != nil && stateRefusal(derr.Code) {
		// The peer's task is past what the message would change (a cancel
		// that crossed the task's outcome): answered, nothing to retry,
		// not a dead letter.
		o.log.Info("the peer refused a state change", "id", it.ID, "type", it.Type, "peer", it.Peer, "err", derr.Err)
		derr = nil
	}
	if derr != nil {
		o.n.pairing.refusedBy(it.Peer, derr.Code) // pairing.go
		return derr
	}
	o.n.pairing.acceptedBy(it.Peer)
	if o.n.pairing.heard(it.Peer, nil) {
		peer := it.Peer
		o.n.spawn(func() { o.n.out.Wake(peer) })
	}
	return nil
}

// stateRefusal tells the refusals of a message that does not fit the
// state of its task at the peer (seed 004 §3.2): final answers.
func stateRefusal(code wire.ErrorCode) bool {
	return code == wire.CodeTaskAlreadyCompleted || code == wire.CodeInvalidStateChange
}
