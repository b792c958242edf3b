package outbox

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

	"github.com/synapse-edge/synapse/internal/clock"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Delivery timing that is not configurable.
const (
	// DeliveryTimeout bounds one delivery (seed 004 §8.1 suggests 30 s).
	DeliveryTimeout = 30 * time.Second
	// readAhead is how many items a round reads, unless Peers asks for
	// more (Peers.ReadAhead).
	readAhead = 64
	// maxDelivering bounds the rounds under way (and not slow) at once,
	// for peers and for webhooks each.
	maxDelivering = 16
	// slowAfter is how long a round holds its delivery slot.
	slowAfter = time.Second
	// maxRevive bounds the dead letters requeued in one transaction.
	maxRevive = 100_000
	// maxBackoff caps one wait.
	maxBackoff = time.Hour
	// maxReply bounds the part of a webhook's answer that is read.
	maxReply = 64 << 10
)

// Clock is the source of time of the queue: its retries wait on it.
type Clock = clock.Clock

// Timer is a pending AfterFunc call.
type Timer = clock.Timer

// Metrics are the counters the queue moves; nil ones are not counted.
type Metrics struct {
	// Queued: messages written; Delivered: answered 2xx; Retries: failed
	// deliveries that will be retried; Dead: moved to the dead letters;
	// FullWindows: rounds to a peer that filled their window.
	Queued, Delivered, Retries, Dead, FullWindows *metrics.Counter
}

// Options configures New.
type Options struct {
	// DB holds the records (records.go).
	DB *store.DB
	// Transport sends the webhooks (Callback messages).
	Transport transport.Transport
	// Clock is the queue's time; Go runs its goroutines (a tracked
	// starter that does nothing once its owner closes).
	Clock Clock
	Go    func(func())
	// Logger: a child with component=outbox is used; nil logs nothing.
	Logger *slog.Logger
	// Metrics are the counters moved.
	Metrics Metrics
	// Peers delivers to peers; nil: there are none (a message for a peer
	// is given up as for one that is not paired).
	Peers Peers
	// Deliver delivers the messages of the types it holds (to their URL)
	// instead of the plain webhook, the A2A push notifications for one.
	Deliver map[string]func(ctx context.Context, it *Item) *Failure
	// Secret signs the plain webhooks (transport.HeaderSignature); nil:
	// unsigned.
	Secret []byte
	// MaxRetries is how many retries a message gets; RetryBase the base
	// of their back-off.
	MaxRetries int
	RetryBase  time.Duration
}

// Queue delivers the outbox: see the package doc for its lanes, rounds
// and retries. Build it with New; Start begins deliveries, Drain waits
// for those under way, Close stops the timers.
type Queue struct {
	ctx   context.Context
	opts  Options
	db    *store.DB
	clock Clock
	log   *slog.Logger
	m     Metrics
	// Delivery slots of rounds to peers and to webhooks.
	peerSlots, hookSlots chan struct{}

	mu      sync.Mutex
	started bool
	closed  bool
	lanes   map[string]*lane
	// quiet is closed (and replaced) whenever a lane stops delivering.
	quiet chan struct{}
	// deleting holds the sequence numbers of the messages delivered whose
	// deletion is not committed yet (forget): lanes pass over them when
	// they read their queue.
	deleting map[uint64]bool
}

// lane is the delivery state of one destination; Queue.mu guards it.
type lane struct {
	running bool  // a goroutine delivers
	again   bool  // poked while running: look at the queue once more
	urgent  bool  // deliver the head now even if it waits for a retry
	timer   Timer // wakes the lane for its head's next attempt
}

// New builds the queue of opts.DB; ctx is its life: deliveries under way
// end when it is done.
func New(ctx context.Context, opts Options) *Queue {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Queue{ctx: ctx, opts: opts, db: opts.DB, clock: opts.Clock, log: log.With("component", "outbox"), m: opts.Metrics,
		peerSlots: make(chan struct{}, maxDelivering), hookSlots: make(chan struct{}, maxDelivering),
		lanes: map[string]*lane{}, deleting: map[uint64]bool{}, quiet: make(chan struct{})}
}

// Message is what Enqueue queues: for Peer (an agent id) or URL (a
// webhook; it wins when both are set).
type Message struct {
	Peer, URL     string
	Type          wire.MessageType
	CorrelationID string
	// Payload is encoded as JSON.
	Payload any
}

// Enqueue writes m in tx; its lane is poked when tx commits. It returns
// the message's id, its envelope's message_id.
func (o *Queue) Enqueue(tx *store.Tx, m Message) (string, error) {
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
	now := o.clock.Now().UTC()
	it := &Item{ID: id.String(), Peer: m.Peer, URL: m.URL, Type: string(m.Type), CorrelationID: m.CorrelationID,
		Payload: payload.Bytes(), CreatedAt: now, NextAttempt: now}
	if it.URL != "" {
		it.Peer = ""
	}
	if err := Put(tx, it); err != nil {
		return "", fmt.Errorf("outbox: queue %s: %w", m.Type, err)
	}
	dest := it.Dest()
	tx.OnCommit(func() {
		inc(o.m.Queued, 1)
		o.Poke(dest, false)
	})
	return it.ID, nil
}

func inc(c *metrics.Counter, n int) {
	if c != nil {
		c.Add(uint64(n))
	}
}

// Start pokes every destination with queued messages.
func (o *Queue) Start() {
	o.mu.Lock()
	o.started = true
	o.mu.Unlock()
	var dests []string
	if err := o.db.View(func(tx *store.Tx) error {
		var err error
		dests, err = Dests(tx)
		return err
	}); err != nil {
		o.log.Error("read outbox", "err", err)
	}
	for _, d := range dests {
		o.Poke(d, false)
	}
}

// Drain waits until no lane is delivering (lanes waiting for a retry do
// not count), or ctx is done: what can be sent now goes before shutdown.
func (o *Queue) Drain(ctx context.Context) {
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

// Close stops the timers; delivering lanes end with the queue's context.
// It is safe twice.
func (o *Queue) Close() {
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

// Poke makes dest's lane look at its queue now; with urgent its head is
// sent even if it waits for a retry. It never blocks (the store's writer
// calls it).
func (o *Queue) Poke(dest string, urgent bool) {
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
	o.opts.Go(func() { o.run(dest, l) })
}

// run delivers dest's queue until it is empty, its head must wait, or the
// queue's context ends.
func (o *Queue) run(dest string, l *lane) {
	// Each round delivers or gives up at least one message, or ends the
	// loop: it is bounded by the queue.
	for {
		if o.ctx.Err() != nil {
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
func (o *Queue) idle(dest string, l *lane, wait time.Duration) bool {
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
	l.timer = o.clock.AfterFunc(wait, func() { o.Poke(dest, false) })
	return true
}

// round reads the head of dest's queue and delivers what is due. stop is
// true when the lane has nothing to do now, wait then being the time until
// its head is due (0: the queue is empty).
func (o *Queue) round(dest string, l *lane) (stop bool, wait time.Duration) {
	// Messages delivered whose deletion is not committed are passed over
	// without being decoded.
	deleting := func(seq uint64) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.deleting[seq]
	}
	var batch []*Item
	err := o.db.View(func(tx *store.Tx) error {
		var err error
		batch, err = Batch(tx, dest, o.readAhead(dest), deleting)
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
	now := o.clock.Now()
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
	var delivered []*Item
	var failed *Item
	dead := false
	for i, derr := range results {
		it := batch[i]
		if derr == nil {
			delivered = append(delivered, it)
			continue
		}
		if failed != nil || o.ctx.Err() != nil {
			// Only the first failure of a round counts: the later ones
			// waited for it, or the agent is shutting down. They are sent
			// again in a later round.
			continue
		}
		failed, dead = it, o.failed(it, derr, o.clock.Now())
	}
	if failed == nil {
		o.forget(dest, delivered)
		return false, 0
	}
	err = o.db.Update(context.Background(), func(tx *store.Tx) error {
		for _, it := range delivered {
			if err := Delivered(tx, it.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		var err error
		if dead {
			err = Kill(tx, failed)
		} else {
			err = RetryLater(tx, failed)
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
	inc(o.m.Delivered, len(delivered))
	switch {
	case dead:
		inc(o.m.Dead, 1)
		o.log.Warn("message given up", "id", failed.ID, "type", failed.Type, "dest", dest,
			"attempts", failed.Attempts, "err", failed.LastError)
	default:
		inc(o.m.Retries, 1)
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
func (o *Queue) forget(dest string, items []*Item) {
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
			if err := Delivered(tx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
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
			o.Poke(dest, false)
			return
		}
		inc(o.m.Delivered, len(ids))
	})
}

// failed records a failed attempt in it; true means it is now dead.
func (o *Queue) failed(it *Item, derr *Failure, now time.Time) bool {
	it.LastError = derr.Error()
	it.Attempts++
	if derr.Permanent || it.Attempts > o.opts.MaxRetries {
		it.DeadAt = now.UTC()
		it.Unreachable = derr.Unreachable && !derr.Permanent
		return true
	}
	it.NextAttempt = now.Add(max(backoff(o.opts.RetryBase, it.Attempts-1), derr.RetryAfter)).UTC()
	return false
}

// backoff is a random wait in [0, base * 2^n] (full jitter), at most an
// hour.
func backoff(base time.Duration, n int) time.Duration {
	ceil := maxBackoff
	if n < 40 && base < maxBackoff>>min(n, 40) {
		ceil = base << n
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// slot takes a delivery slot for a round; release gives it back (once;
// after slowAfter it is given back by itself). ok is false when the queue
// is closing.
func (o *Queue) slot(peer bool) (release func(), ok bool) {
	slots := o.hookSlots
	if peer {
		slots = o.peerSlots
	}
	select {
	case slots <- struct{}{}:
	case <-o.ctx.Done():
		return nil, false
	}
	var once sync.Once
	free := func() { once.Do(func() { <-slots }) }
	t := o.clock.AfterFunc(slowAfter, free)
	return func() {
		t.Stop()
		free()
	}, true
}

// readAhead is how many items a round of dest reads.
func (o *Queue) readAhead(dest string) int {
	if o.opts.Peers != nil && strings.HasPrefix(dest, peerPrefix) {
		if n := o.opts.Peers.ReadAhead(dest); n > 0 {
			return n
		}
	}
	return readAhead
}

// window is the part of batch (oldest first) that a round sends: its head
// and the due items behind it, up to the peer's window (Peers.Window; one
// to a webhook); concurrent tells whether they go at once (a peer that
// orders its messages) or one after another.
func (o *Queue) window(dest string, batch []*Item, now time.Time) (items []*Item, concurrent bool) {
	size := 1
	if o.opts.Peers != nil && strings.HasPrefix(dest, peerPrefix) {
		size, concurrent = o.opts.Peers.Window(dest)
		size = max(size, 1)
	}
	n := 1
	for n < len(batch) && n < size && !batch[n].NextAttempt.After(now) {
		n++
	}
	if n == size && size > 1 {
		inc(o.m.FullWindows, 1)
	}
	return batch[:n], concurrent
}

// Wake is called when a peer is heard from: its dead letters that gave up
// for want of a connection are requeued, in their original order ahead of
// newer messages, and its head is sent now.
func (o *Queue) Wake(peer string) {
	dest := PeerDest(peer)
	has := false
	_ = o.db.View(func(tx *store.Tx) error {
		has = HasDead(tx, dest, true)
		return nil
	})
	if has {
		var n int
		err := o.db.Update(o.ctx, func(tx *store.Tx) error {
			var err error
			n, err = ReviveDest(tx, dest, true, o.clock.Now().UTC(), maxRevive)
			return err
		})
		if err != nil {
			o.log.Error("requeue dead letters", "peer", peer, "err", err)
		} else if n > 0 {
			o.log.Info("requeued dead letters", "peer", peer, "count", n)
		}
	}
	o.Poke(dest, true)
}

// Count is how many messages are in state s.
func (o *Queue) Count(s State) int {
	n := 0
	_ = o.db.View(func(tx *store.Tx) error {
		n = Count(tx, s)
		return nil
	})
	return n
}
