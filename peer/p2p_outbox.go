package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The outbox delivers, per destination (a peer or a webhook URL), the
// oldest message first and nothing behind it until it is delivered or
// given up (head of line): a peer sees the messages of a task in the order
// they were sent.
//
// A destination with messages has a lane. A lane runs on a goroutine only
// while it delivers; while its head waits for its next attempt it is a
// timer. A lane sends in rounds: a round takes one of the delivery slots
// (maxDelivering for peers, as many again for webhooks), sends, and gives
// the slot back when it ends or once it has taken slowAfter, whichever
// comes first — a destination that accepts connections and never answers
// holds a slot for slowAfter, not for deliveryTimeout, so it cannot starve
// the others (its lane goes on waiting for its answer on its own
// goroutine; one lane per destination bounds them).
//
// Pipelining (p2p_order.go): a round to a peer that announced ordered
// delivery sends up to peerWindow messages at once, each with its
// sequence number and its predecessor's; the peer applies them in that
// order and its group commit gives them one fsync. To a peer that also
// announced batches (p2p_batch.go, over http and https) a round sends up
// to batchWindow messages as batches of batchChunk, one request and one
// answer each. Webhooks, and peers until they have announced ordering,
// get one message per round.
//
// Retries: after failure n (1-based) the next attempt waits a random time
// up to retry_base_delay * 2^(n-1) (full jitter), or the Retry-After the
// destination asked for if that is longer. After max_retries retries, or
// at once on 410 Gone, on a peer's refusal that it marks not retriable
// (a 4xx TPError with "retriable": false, but for 401, 408 and 429) or for
// a peer that is no longer paired, the message becomes a dead letter with
// its last error. Dead letters that gave up
// because the peer could not be reached (a transport error, 401, 502, 503,
// 504) are requeued at their original place when the peer is heard from
// again (its heartbeat, or ours answered); the others wait for a person
// (POST /outbox/{id}/retry).
//
// Delivery is at least once: a message is deleted after its 2xx answer, so
// a crash in between sends it again, with the same message_id, which the
// receiver answers as a duplicate.

const (
	// outboxBatch is how many items a lane reads per round.
	outboxBatch = 64
	// peerWindow is how many messages a round sends at once to a peer
	// that orders them, one request each.
	peerWindow = 32
	// batchWindow is how many a round sends at once to a peer that takes
	// batches (p2p_batch.go), in batches of batchChunk: several batches
	// in flight let the sender sign one while the receiver applies
	// another.
	batchWindow = 128
	batchChunk  = 64
	// maxDelivering bounds the rounds under way (and not slow) at once,
	// for peers and for webhooks each.
	maxDelivering = 16
	// slowAfter is how long a round holds its delivery slot.
	slowAfter = time.Second
	// maxRevive bounds the dead letters requeued in one transaction.
	maxRevive = 100_000
	// maxBackoff caps one wait.
	maxBackoff = time.Hour
)

type queue struct {
	n   *Network
	db  *store.DB
	log *slog.Logger
	// Delivery slots of rounds to peers and to webhooks.
	peerSlots, hookSlots chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
	lanes   map[string]*lane
	// ordered holds the peers (destinations) that announced ordered
	// delivery (their windows are open); batches, those that announced
	// batches (p2p_batch.go).
	ordered    map[string]bool
	batches    map[string]batchTerms
	batchesOff map[string]time.Time // when a peer refused a batch
	// quiet is closed (and replaced) whenever a lane stops delivering.
	quiet chan struct{}
	// deleting holds the sequence numbers of the messages delivered whose
	// deletion is not committed yet (forget): lanes pass over them when
	// they read their queue.
	deleting map[uint64]bool
}

// lane is the delivery state of one destination; outbox.mu guards it.
type lane struct {
	running bool        // a goroutine delivers
	again   bool        // poked while running: look at the queue once more
	urgent  bool        // deliver the head now even if it waits for a retry
	timer   agent.Timer // wakes the lane for its head's next attempt
}

func newQueue(n *Network) *queue {
	return &queue{n: n, db: n.db, log: n.log.With("component", "outbox"),
		peerSlots: make(chan struct{}, maxDelivering), hookSlots: make(chan struct{}, maxDelivering),
		lanes: map[string]*lane{}, deleting: map[uint64]bool{}, ordered: map[string]bool{}, batches: map[string]batchTerms{}, batchesOff: map[string]time.Time{}, quiet: make(chan struct{})}
}

// enqueue writes m in tx; its lane is poked when tx commits.
func (o *queue) enqueue(tx *store.Tx, m agent.Outgoing) error {
	_, err := o.add(tx, m)
	return err
}

// add is enqueue; it returns the message's id, its envelope's message_id.
func (o *queue) add(tx *store.Tx, m agent.Outgoing) (string, error) {
	if m.Type == "" {
		return "", errors.New("outbox: message without a type")
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("outbox: message id: %w", err)
	}
	payload, err := wire.NewJSONPayload(m.Payload)
	if err != nil {
		return "", fmt.Errorf("outbox: %s: %w", m.Type, err)
	}
	now := o.n.clock.Now().UTC()
	it := &outbox.Item{ID: id.String(), Peer: m.Peer, URL: m.URL, Type: string(m.Type), CorrelationID: m.CorrelationID,
		Payload: payload.Bytes(), CreatedAt: now, NextAttempt: now}
	if it.URL != "" {
		it.Peer = ""
	}
	if err := outbox.Put(tx, it); err != nil {
		return "", fmt.Errorf("outbox: queue %s: %w", m.Type, err)
	}
	dest := it.Dest()
	tx.OnCommit(func() {
		o.n.m.queued.Inc()
		o.poke(dest, false)
	})
	return it.ID, nil
}

// start pokes every destination with queued messages.
func (o *queue) start() {
	o.mu.Lock()
	o.started = true
	o.mu.Unlock()
	var dests []string
	if err := o.db.View(func(tx *store.Tx) error {
		var err error
		dests, err = outbox.Dests(tx)
		return err
	}); err != nil {
		o.log.Error("read outbox", "err", err)
	}
	for _, d := range dests {
		o.poke(d, false)
	}
}

// drain waits until no lane is delivering (lanes waiting for a retry do
// not count), or ctx is done: what can be sent now goes before shutdown.
func (o *queue) drain(ctx context.Context) {
	for { // each wait ends when a lane stops
		o.mu.Lock()
		busy := false
		for _, l := range o.lanes {
			busy = busy || l.running
		}
		ch := o.quiet
		o.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// close stops the timers; delivering lanes end with the node's context.
func (o *queue) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for _, l := range o.lanes {
		if l.timer != nil {
			l.timer.Stop()
			l.timer = nil
		}
	}
}

// poke makes dest's lane look at its queue now; with urgent its head is
// sent even if it waits for a retry. It never blocks (the store's writer
// calls it).
func (o *queue) poke(dest string, urgent bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.started || o.closed {
		return
	}
	l := o.lanes[dest]
	if l == nil {
		l = &lane{}
		o.lanes[dest] = l
	}
	l.urgent = l.urgent || urgent
	if l.running {
		l.again = true
		return
	}
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.running = true
	o.n.spawn(func() { o.run(dest, l) })
}

// run delivers dest's queue until it is empty, its head must wait, or the
// agent closes.
func (o *queue) run(dest string, l *lane) {
	// Each round delivers or gives up at least one message, or ends the
	// loop: it is bounded by the queue.
	for {
		if o.n.ctx.Err() != nil {
			o.idle(dest, l, 0)
			return
		}
		stop, wait := o.round(dest, l)
		if !stop {
			continue
		}
		if o.idle(dest, l, wait) {
			return
		}
	}
}

// idle ends a lane's goroutine unless it was poked meanwhile (then it
// reports false and the lane goes on). wait > 0 arms the timer of the
// head's next attempt.
func (o *queue) idle(dest string, l *lane, wait time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if l.again && !o.closed {
		l.again = false
		return false
	}
	l.running = false
	close(o.quiet)
	o.quiet = make(chan struct{})
	if wait <= 0 || o.closed {
		delete(o.lanes, dest)
		return true
	}
	l.timer = o.n.clock.AfterFunc(wait, func() { o.poke(dest, false) })
	return true
}

// round reads the head of dest's queue and delivers what is due. stop is
// true when the lane has nothing to do now, wait then being the time until
// its head is due (0: the queue is empty).
func (o *queue) round(dest string, l *lane) (stop bool, wait time.Duration) {
	// Messages delivered whose deletion is not committed are passed over
	// without being decoded.
	deleting := func(seq uint64) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.deleting[seq]
	}
	var batch []*outbox.Item
	err := o.db.View(func(tx *store.Tx) error {
		var err error
		batch, err = outbox.Batch(tx, dest, o.readAhead(dest), deleting)
		return err
	})
	if err != nil {
		o.log.Error("read outbox", "dest", dest, "err", err)
		return true, time.Second
	}
	o.mu.Lock()
	if len(batch) == 0 {
		o.mu.Unlock()
		return true, 0 // nothing, or only delivered ones being deleted
	}
	urgent := l.urgent
	l.urgent = false
	o.mu.Unlock()
	now := o.n.clock.Now()
	if d := batch[0].NextAttempt.Sub(now); d > 0 && !urgent {
		return true, d
	}
	release, ok := o.slot(strings.HasPrefix(dest, peerPrefix))
	if !ok {
		return true, 0 // shutting down
	}
	items, concurrent := o.window(dest, batch, now)
	results := o.send(dest, items, concurrent)
	release()
	var delivered []*outbox.Item
	var failed *outbox.Item
	dead := false
	for i, derr := range results {
		it := batch[i]
		if derr == nil {
			delivered = append(delivered, it)
			continue
		}
		if failed != nil || o.n.ctx.Err() != nil {
			// Only the first failure of a round counts: the later ones
			// waited for it, or the agent is shutting down. They are sent
			// again in a later round.
			continue
		}
		failed, dead = it, o.failed(it, derr, o.n.clock.Now())
	}
	if failed == nil {
		o.forget(dest, delivered)
		return false, 0
	}
	err = o.db.Update(context.Background(), func(tx *store.Tx) error {
		for _, it := range delivered {
			if err := outbox.Delivered(tx, it.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		var err error
		if dead {
			err = outbox.Kill(tx, failed)
		} else {
			err = outbox.RetryLater(tx, failed)
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil // dropped meanwhile
		}
		return err
	})
	if err != nil {
		// Delivered messages will be sent again (the receiver drops the
		// duplicates); a failure is retried without being counted.
		o.log.Error("record deliveries", "dest", dest, "err", err)
		return true, time.Second
	}
	o.n.m.delivered.Add(uint64(len(delivered)))
	switch {
	case dead:
		o.n.m.dead.Inc()
		o.log.Warn("message given up", "id", failed.ID, "type", failed.Type, "dest", dest,
			"attempts", failed.Attempts, "err", failed.LastError)
	default:
		o.n.m.retries.Inc()
		o.log.Debug("delivery failed", "id", failed.ID, "type", failed.Type, "dest", dest,
			"attempts", failed.Attempts, "next", failed.NextAttempt, "err", failed.LastError)
	}
	return false, 0
}

// forget deletes delivered messages with the store's next commit
// (store.DB.UpdateLazy: no commit of its own, nothing waits for it); lanes
// skip them until then. A crash before that sends them again, and the
// receiver answers them as duplicates; a failed deletion sends them again
// now.
func (o *queue) forget(dest string, items []*outbox.Item) {
	if len(items) == 0 {
		return
	}
	ids := make([]string, len(items))
	o.mu.Lock()
	for i, it := range items {
		ids[i] = it.ID
		o.deleting[it.Seq] = true
	}
	o.mu.Unlock()
	o.db.UpdateLazy(func(tx *store.Tx) error {
		for _, id := range ids {
			if err := outbox.Delivered(tx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return nil
	}, func(err error) {
		o.mu.Lock()
		for _, it := range items {
			delete(o.deleting, it.Seq)
		}
		o.mu.Unlock()
		if err != nil {
			o.log.Error("record deliveries", "count", len(ids), "err", err)
			o.poke(dest, false)
			return
		}
		o.n.m.delivered.Add(uint64(len(ids)))
	})
}

// deliveryError is a failed delivery and what it means for retries.
type deliveryError struct {
	err        error
	retryAfter time.Duration
	// unreachable: the destination could not be reached (or did not know
	// us yet); requeue when it is heard from again.
	unreachable bool
	// permanent: do not retry.
	permanent bool
	// code is the TPError code of the peer's refusal, if any.
	code wire.ErrorCode
	// refusedContract: the peer does not hold the contract the message
	// was sent under (recorded as revoked; a new one is negotiated).
	refusedContract bool
}

func (e *deliveryError) Error() string { return e.err.Error() }

// failed records a failed attempt in it; true means it is now dead.
func (o *queue) failed(it *outbox.Item, derr *deliveryError, now time.Time) bool {
	cfg := o.n.p2p
	it.LastError = derr.Error()
	it.Attempts++
	if derr.permanent || it.Attempts > cfg.MaxRetries {
		it.DeadAt = now.UTC()
		it.Unreachable = derr.unreachable && !derr.permanent
		return true
	}
	it.NextAttempt = now.Add(max(backoff(cfg.RetryBaseDelay(), it.Attempts-1), derr.retryAfter)).UTC()
	return false
}

// backoff is a random wait in [0, base * 2^n] (full jitter), at most
// maxBackoff.
func backoff(base time.Duration, n int) time.Duration {
	ceil := maxBackoff
	if n < 40 && base < maxBackoff>>min(n, 40) {
		ceil = base << n
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

const peerPrefix = "peer:"

// slot takes a delivery slot for a round; release gives it back (once;
// after slowAfter it is given back by itself). ok is false when the agent
// is closing.
func (o *queue) slot(peer bool) (release func(), ok bool) {
	slots := o.hookSlots
	if peer {
		slots = o.peerSlots
	}
	select {
	case slots <- struct{}{}:
	case <-o.n.ctx.Done():
		return nil, false
	}
	var once sync.Once
	free := func() { once.Do(func() { <-slots }) }
	t := o.n.clock.AfterFunc(slowAfter, free)
	return func() {
		t.Stop()
		free()
	}, true
}

// readAhead is how many items a round of dest reads.
func (o *queue) readAhead(dest string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.batches[dest].max > 0 {
		return batchWindow
	}
	return outboxBatch
}

// window is the part of batch (oldest first) that a round sends: its head
// and the due items behind it, up to peerWindow (batchWindow to a peer
// that takes batches); concurrent tells whether they go at once (a peer
// that orders its messages) or one after another.
func (o *queue) window(dest string, batch []*outbox.Item, now time.Time) (items []*outbox.Item, concurrent bool) {
	size := 1
	if strings.HasPrefix(dest, peerPrefix) {
		o.mu.Lock()
		concurrent = o.ordered[dest]
		if concurrent {
			size = peerWindow
		}
		if concurrent && o.batches[dest].max > 0 {
			size = batchWindow
		}
		o.mu.Unlock()
	}
	n := 1
	for n < len(batch) && n < size && !batch[n].NextAttempt.After(now) {
		n++
	}
	if n == size && size > 1 {
		o.n.m.fullWindows.Inc()
	}
	return batch[:n], concurrent
}

// errNotSent stands for the items of a sequential round after its first
// failure.
var errNotSent = &deliveryError{err: errors.New("not sent: an earlier message failed")}

// send delivers the items of one round and returns their outcomes in
// order. Each peer message carries its sequence number and its
// predecessor's in the round (the head has none: everything before it was
// delivered or given up).
func (o *queue) send(dest string, items []*outbox.Item, concurrent bool) []*deliveryError {
	out := make([]*deliveryError, len(items))
	var p *peer
	if items[0].Peer != "" {
		var derr *deliveryError
		if p, derr = o.ready(items[0].Peer); derr != nil {
			for i := range out {
				out[i] = derr
			}
			return out
		}
	}
	if !concurrent {
		for i, it := range items {
			if i > 0 && out[i-1] != nil {
				out[i] = errNotSent
				continue
			}
			if p == nil {
				out[i] = o.deliverHook(it)
			} else {
				out[i] = o.deliverPeer(dest, p, it, Sequence{Seq: it.Seq})
			}
		}
		return out
	}
	if max := o.batchable(dest, p); max > 0 && len(items) > 1 {
		return o.sendBatches(dest, p, items, min(max, batchChunk))
	}
	var wg sync.WaitGroup
	for i, it := range items {
		s := Sequence{Seq: it.Seq}
		if i > 0 {
			s.Prev = items[i-1].Seq
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = o.deliverPeer(dest, p, it, s)
		}()
	}
	wg.Wait()
	return out
}

// ready is called before a round sends to a peer: the peer must still be
// paired. What must hold before anything is sent to a peer is checked here.
func (o *queue) ready(peerID string) (*peer, *deliveryError) {
	p := o.n.pairing.peers.get(peerID)
	if p == nil {
		return nil, &deliveryError{err: fmt.Errorf("%s is not a paired peer", peerID), permanent: true}
	}
	return p, nil
}

// deliverPeer sends one message to a peer, with its sequence.
func (o *queue) deliverPeer(dest string, p *peer, it *outbox.Item, s Sequence) *deliveryError {
	ctx, cancel := context.WithTimeout(o.n.ctx, deliveryTimeout)
	defer cancel()
	pl, err := wire.RawJSONPayload(it.Payload)
	if err != nil {
		return &deliveryError{err: fmt.Errorf("stored payload: %w", err), permanent: true}
	}
	out, derr := o.n.sendUnderContract(ctx, p, wire.MessageType(it.Type), it.ID, it.CorrelationID, pl, s)
	if derr == nil {
		o.heardAnswer(dest, out)
	}
	if derr == nil {
		derr = failure(out)
	}
	if derr != nil && stateRefusal(derr.code) {
		// The peer's task is past what the message would change (a cancel
		// that crossed the task's outcome): answered, nothing to retry,
		// not a dead letter.
		o.log.Info("the peer refused a state change", "id", it.ID, "type", it.Type, "peer", it.Peer, "err", derr.err)
		derr = nil
	}
	if derr != nil {
		o.n.pairing.refusedBy(it.Peer, derr.code) // pairing.go
		return derr
	}
	o.n.pairing.acceptedBy(it.Peer)
	if o.n.pairing.heard(it.Peer, nil) {
		peer := it.Peer
		o.n.spawn(func() { o.wake(peer) })
	}
	return nil
}

// stateRefusal tells the refusals of a message that does not fit the
// state of its task at the peer (seed 004 §3.2): final answers.
func stateRefusal(code wire.ErrorCode) bool {
	return code == wire.CodeTaskAlreadyCompleted || code == wire.CodeInvalidStateChange
}

// deliverHook sends one callback to a plain webhook or an A2A push.
func (o *queue) deliverHook(it *outbox.Item) *deliveryError {
	ctx, cancel := context.WithTimeout(o.n.ctx, deliveryTimeout)
	defer cancel()
	if it.Type == A2APushType {
		return o.deliverA2APush(ctx, it)
	}
	h := map[string]string{transport.HeaderMessageID: it.ID}
	if o.n.secret != nil {
		h[transport.HeaderSignature] = wire.SignHMAC(o.n.secret, o.n.clock.Now(), it.Payload)
	}
	return failure(o.n.send(ctx, &transport.Message{Kind: transport.Callback, To: it.URL, Body: it.Payload,
		ContentType: wire.ContentJSON, Header: h}))
}

// failure is what a delivery's outcome means for the outbox (nil when
// delivered). The transport classified it (transport.Classify): Retry is
// retried (Unreached: requeued when the peer is heard from again, once it
// gave up), Permanent and Negotiable are not (a message the peer refused
// under its contract was sent again under a new one already, by
// sendUnderContract).
func failure(out transport.Outcome) *deliveryError {
	if out.Delivered() {
		return nil
	}
	d := &deliveryError{err: out.Err, retryAfter: out.RetryAfter, code: errorCode(out)}
	if out.Class == transport.Retry {
		d.unreachable = out.Unreached
	} else {
		d.permanent = true
	}
	return d
}

// wake is called when a peer is heard from: its dead letters that gave up
// for want of a connection are requeued, in their original order ahead of
// newer messages, and its head is sent now.
func (o *queue) wake(peer string) {
	dest := outbox.PeerDest(peer)
	has := false
	_ = o.db.View(func(tx *store.Tx) error {
		has = outbox.HasDead(tx, dest, true)
		return nil
	})
	if has {
		var n int
		err := o.db.Update(o.n.ctx, func(tx *store.Tx) error {
			var err error
			n, err = outbox.ReviveDest(tx, dest, true, o.n.clock.Now().UTC(), maxRevive)
			return err
		})
		if err != nil {
			o.log.Error("requeue dead letters", "peer", peer, "err", err)
		} else if n > 0 {
			o.log.Info("requeued dead letters", "peer", peer, "count", n)
		}
	}
	o.poke(dest, true)
}

func (o *queue) count(s outbox.State) int {
	n := 0
	_ = o.db.View(func(tx *store.Tx) error {
		n = outbox.Count(tx, s)
		return nil
	})
	return n
}
