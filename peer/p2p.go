package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The P2P layer (seed 004, SPEC §6) has four parts:
//
//   - peers (Pairing, peers.go): agents paired by fetching their
//     /identity and pinning its Ed25519 key, with an online/offline/busy
//     status kept by heartbeats;
//   - the outbox (package outbox; its peer side in p2p_outbox.go): every
//     message for a peer, and every callback to a plain webhook, is
//     written to the store in the transaction of the state change that
//     announces it and delivered from there, in order per destination,
//     with retries and dead letters;
//   - inbound (Inbound, p2p_inbound.go): envelopes from peers are checked
//     (pinned sender, signature, timestamp, message id not seen) and
//     handed to the task engine;
//   - the feed (below): the last envelopes received, for observers.
//
// Peers authenticate by signature, not by bearer token: an envelope is
// accepted only when it verifies with the key pinned for its sender.

// P2P timing that is not configurable.
const (
	// deliveryTimeout bounds one delivery (seed 004 §8.1 suggests 30 s).
	deliveryTimeout = outbox.DeliveryTimeout
	// identityTimeout bounds the identity fetch of pairing.
	identityTimeout = 10 * time.Second
	// maxHeartbeatTimeout bounds one heartbeat request.
	maxHeartbeatTimeout = 10 * time.Second
	// offlineAfter is how many heartbeat intervals of silence make a peer
	// offline.
	offlineAfter = 3
	// seenTTL is how long received message ids are remembered. The outbox
	// of a peer may redeliver an old message with a fresh timestamp, so
	// this is far longer than the replay window.
	seenTTL = 7 * 24 * time.Hour
	// flushWait bounds how long close lets deliveries under way finish.
	flushWait = 5 * time.Second
	// maxAnswerBytes bounds the part of an answer body that is read.
	maxAnswerBytes = 64 << 10
)

// MessagePath is the path of the inbound message endpoint.
const MessagePath = wire.APIPrefix + "/message"

// Network is the peer network of one agent: its peer book (Pairing), its
// outbox, the inbound envelope pipeline (Inbound), the registry it may be
// and its registrar (package registry). Build it with New
// before the agent opens; the agent's Open and Close open and close it.
type Network struct {
	a   *agent.Agent
	log *slog.Logger
	// cfg is the agent's configuration (its limits); p2p and registry are
	// the network's own sections (Options).
	cfg      agent.Config
	p2p      Config
	registry *RegistryConfig
	// db and clock are the agent's, set by Open.
	db    *store.DB
	clock agent.Clock
	// t is the agent's transport: everything the network sends goes
	// through it (webhooks as Callback messages, which the HTTP transport
	// dials through the outbound policy).
	t      transport.Transport
	secret []byte

	// pairing is the peer book: the paired peers, their pins, the pair
	// requests and the heartbeats (peers.go, pairing.go).
	pairing *Pairing
	out     *outbox.Queue
	admin   OutboxAdmin
	// contracts makes and enforces the contracts with peers, and
	// contractor runs their negotiations and sends under them
	// (contracts.go). contracts is built in Open, over the outbox.
	contracts  *contracts.Manager
	contractor *contractor
	// inbound checks and applies the envelopes from peers
	// (p2p_inbound.go, receiver.go).
	inbound *Inbound
	feed    MessageFeed
	m       p2pMetrics
	// dir is the registry this agent may be (registry.go).
	dir *registry.Directory
	// opened is set once Open loaded the peers.
	opened atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// hbTimer wakes the heartbeat loop; stopped ends it and refuses new
	// goroutines.
	hbMu    sync.Mutex
	hbTimer agent.Timer
	stopped bool
}

var _ agent.Network = (*Network)(nil)

// TaskTimeout is the deadline of a task delegated without ttl_seconds
// (p2p.task_timeout_seconds).
func (n *Network) TaskTimeout() time.Duration { return n.p2p.TaskTimeout() }

type p2pMetrics struct {
	queued, delivered, retries, dead *metrics.Counter
	// batches: batches sent; fullWindows: rounds to a peer that filled
	// their window (pipelining at its limit); batchesIn: batches received.
	batches, fullWindows, batchesIn *metrics.Counter
	received                        *metrics.CounterVec
	refused                         *metrics.CounterVec
}

// Options configures New.
type Options struct {
	// Logger is the network's logger (a child with component=p2p is
	// used); the agent's logger when nil.
	Logger *slog.Logger
	// Config is the config file's "p2p" section; nil: DefaultConfig().
	Config *Config
	// Registry is the "registry" section: the registry agent this agent
	// registers with; nil: none.
	Registry *RegistryConfig
}

// New builds the network of a (not yet open) and attaches it: a's Open
// loads the peers before it recovers tasks and starts deliveries,
// heartbeats and the registrar after; a's Close stops them. The network's
// settings are opts' p2p and registry sections, checked here.
func New(a *agent.Agent, opts Options) (*Network, error) {
	log := opts.Logger
	if log == nil {
		log = a.Logger()
	}
	p2p := DefaultConfig()
	if opts.Config != nil {
		p2p = *opts.Config
	}
	if err := errors.Join(p2p.Validate(), opts.Registry.Validate()); err != nil {
		return nil, err
	}
	n := &Network{a: a, log: log.With("component", "p2p"), cfg: a.Config(), p2p: p2p, registry: opts.Registry, clock: a.Clock()}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.t = a.Transport()
	if s := p2p.CallbackSecret; s != "" {
		n.secret = []byte(s)
	}
	n.feed.init()
	n.pairing = newPairing(n)
	n.admin = OutboxAdmin{n: n}
	n.dir = registry.New(registry.Options{Now: n.clock.Now, Logger: n.log, PinnedKey: n.pairing.pinnedKey})
	n.inbound = newInbound(n)
	n.contractor = newContractor(n)
	if err := a.Attach(n); err != nil {
		return nil, err
	}
	return n, nil
}

// Open loads the peers and registers the network's metrics; the agent
// calls it once its store is open, before it recovers tasks (which may
// queue messages). Deliveries and heartbeats begin with Start.
func (n *Network) Open(ctx context.Context) error {
	n.db = n.a.Store()
	n.inbound.db = n.db
	n.dir.Open(n.db, n.a.Identity().AgentID)
	if err := n.pairing.open(n.db); err != nil {
		return err
	}
	r := n.a.Metrics()
	n.m = p2pMetrics{
		queued:      r.Counter("synapse_outbox_queued_total", "Messages and callbacks written to the outbox."),
		delivered:   r.Counter("synapse_outbox_delivered_total", "Outbox messages delivered (answered 2xx)."),
		retries:     r.Counter("synapse_outbox_retries_total", "Failed deliveries that will be retried."),
		dead:        r.Counter("synapse_outbox_dead_total", "Outbox messages moved to the dead letters."),
		batches:     r.Counter("synapse_outbox_batches_total", "Batches of envelopes sent to peers (one request each)."),
		fullWindows: r.Counter("synapse_outbox_full_windows_total", "Delivery rounds to a peer that filled their window."),
		batchesIn:   r.Counter("synapse_p2p_batches_received_total", "Batches of envelopes received from peers."),
		received:    r.CounterVec("synapse_p2p_received_total", "Envelopes accepted from peers, by message type.", "type"),
		refused:     r.CounterVec("synapse_p2p_refused_total", "Envelopes refused, by error code.", "code"),
	}
	n.out = newOutbox(n)
	n.contracts = contracts.New(n.a, n.out, n.log)
	r.GaugeFunc("synapse_outbox_pending", "Messages waiting in the outbox.", func() float64 { return float64(n.out.Count(outbox.Pending)) })
	r.GaugeFunc("synapse_outbox_dead_letters", "Messages on the dead-letter list.", func() float64 { return float64(n.out.Count(outbox.Dead)) })
	r.GaugeFunc("synapse_peers", "Paired peers.", func() float64 { return float64(n.pairing.peers.len()) })
	n.opened.Store(true)
	return nil
}

// Start begins deliveries (of what earlier runs left queued too),
// heartbeats and the registrar, and declares the interfaces the P2P layer
// implements; the agent calls it once it has recovered its tasks.
func (n *Network) Start() {
	n.out.Start()
	n.spawn(n.pairing.heartbeats)
	// What the P2P layer implements once it has started: envelopes from
	// peers (POST /message), the tasks they request, the results they
	// send back (POST /callback), results sent through the durable
	// outbox, and callbacks with polling as the fallback.
	_ = n.a.ProvideInterfaces(wire.IfaceMessageHandler, wire.IfaceP2PTaskHandler, wire.IfaceCallbackReceiver,
		wire.IfaceCallbackSender, wire.IfaceHybridTransport)
	if n.registry != nil {
		r := n.newRegistrar(n.registry)
		n.spawn(func() { r.Run(n.ctx) })
	}
}

// Close lets deliveries under way finish (for up to flushWait, within
// ctx), then stops deliveries and heartbeats and waits for them.
// Undelivered messages stay queued for the next start. The agent calls it
// when its engine has stopped, before it closes the store.
func (n *Network) Close(ctx context.Context) {
	dctx, cancel := context.WithTimeout(ctx, flushWait)
	n.out.Drain(dctx)
	cancel()
	n.hbMu.Lock()
	n.stopped = true
	if n.hbTimer != nil {
		n.hbTimer.Stop()
	}
	n.hbMu.Unlock()
	n.out.Close()
	n.cancel()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		<-done // every request has the cancelled context: this is short
	}
	n.feed.closeAll()
}

// spawn runs f on a tracked goroutine; after close it does nothing.
func (n *Network) spawn(f func()) {
	n.hbMu.Lock()
	defer n.hbMu.Unlock()
	if n.stopped {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// ready reports whether the network is open (the agent's Open opened it).
func (n *Network) ready() bool { return n != nil && n.opened.Load() }

// Known reports whether peer is paired.
func (n *Network) Known(peer string) bool { return n.pairing.Known(peer) }

// Refusal is why peer refuses this agent, or "".
func (n *Network) Refusal(peer string) string { return n.pairing.Refusal(peer) }

// Outbox is the administration of the network's outbox.
func (n *Network) Outbox() *OutboxAdmin { return &n.admin }

// Inbound is the network's inbound pipeline: what the doors that take
// envelopes from peers hand them to.
func (n *Network) Inbound() *Inbound { return n.inbound }

// Prune forgets message ids older than seenTTL (the agent's Prune calls
// it).
func (n *Network) Prune(ctx context.Context) error { return n.inbound.Prune(ctx) }

// Pairing is the network's peer book: its paired peers, pair requests
// and pins.
func (n *Network) Pairing() *Pairing { return n.pairing }

// Enqueue queues m durably inside tx (the engine's transaction of the
// change that announces it): a task's result for the peer that asked for
// it is filtered by its task type's disclosure rules first (disclose.go).
func (n *Network) Enqueue(tx *store.Tx, m agent.Outgoing) error {
	m, err := n.disclose(tx, m)
	if err != nil {
		return err
	}
	return enqueue(n.out, tx, m)
}

// self is this agent as an envelope's sender.
func (n *Network) self() wire.AgentRef {
	id := n.a.Identity()
	return wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint}
}

// envelope builds and signs a message for peer.
func (n *Network) envelope(msgType wire.MessageType, peer, id, corr string, payload wire.RawPayload) (*wire.UnifiedSynapseMessage, error) {
	m := n.message(msgType, peer, id, corr, payload)
	if err := n.a.Sign(m); err != nil {
		return nil, err
	}
	return m, nil
}

// message builds a message for peer, unsigned; id empty: a fresh one.
func (n *Network) message(msgType wire.MessageType, peer, id, corr string, payload wire.RawPayload) *wire.UnifiedSynapseMessage {
	m := wire.NewMessage(msgType, n.self(), wire.AgentRef{AgentID: peer}, payload, n.clock.Now())
	if id != "" {
		m.MessageID = id
	}
	m.CorrelationID = corr
	return m
}

// send sends m through the agent's transport, within deliveryTimeout (or
// ctx's deadline when sooner), reading at most maxAnswerBytes of the
// answer unless m says otherwise, under the TLS pin of the peer it goes
// to, if any (tlspin.go).
func (n *Network) send(ctx context.Context, m *transport.Message) transport.Outcome {
	if m.MaxReply == 0 {
		m.MaxReply = maxAnswerBytes
	}
	n.pairing.pinTLS(m)
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	o := n.t.Send(ctx, m)
	n.pairing.checkPinned(m, o)
	return o
}

// sendEnvelope sends a signed JSON envelope to a peer's message endpoint.
func (n *Network) sendEnvelope(ctx context.Context, endpoint string, m *wire.UnifiedSynapseMessage) transport.Outcome {
	return n.sendEnvelopeSeq(ctx, endpoint, m, Sequence{})
}

// sendEnvelopeSeq is sendEnvelope for an outbox message, with its place in
// the sender's order (p2p_order.go; none when s.Seq is 0).
func (n *Network) sendEnvelopeSeq(ctx context.Context, endpoint string, m *wire.UnifiedSynapseMessage, s Sequence) transport.Outcome {
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		return transport.Refused(fmt.Errorf("encode %s: %w", m.MessageType, err))
	}
	h := n.p2p.signHeader(m.Receiver.AgentID, n.clock.Now(), body)
	if s.Seq != 0 {
		h[HeaderSeq] = strconv.FormatUint(s.Seq, 10)
		if s.Prev != 0 {
			h[HeaderSeqPrev] = strconv.FormatUint(s.Prev, 10)
		}
	}
	return n.send(ctx, &transport.Message{Kind: transport.Envelope, To: endpoint, Body: body,
		ContentType: wire.ContentJSON, Header: h})
}

// ordered tells whether an answer announced ordered delivery
// (p2p_order.go).
func ordered(o transport.Outcome) bool {
	return o.ReplyHeader[HeaderOrdering] == OrderingPerSender
}

// errorCode is the code of an answer's TPError, if any.
func errorCode(o transport.Outcome) wire.ErrorCode {
	if o.Error == nil {
		return ""
	}
	return o.Error.Code
}

// ---- feed of received envelopes ----

// subBuffer is how many envelopes a feed subscriber may fall behind
// before it is dropped (the engine's event subscriptions allow as many).
const subBuffer = 256

// The feed keeps the last feedSize envelopes, and at most feedMaxBytes of
// them (large envelopes push out old ones sooner).
const (
	feedSize     = 1000
	feedMaxBytes = 32 << 20
)

// ReceivedMessage is an envelope this agent accepted from a peer.
type ReceivedMessage struct {
	// Seq increases by one per envelope, from 1, for the agent's lifetime.
	Seq       uint64
	MessageID string
	Type      wire.MessageType
	From      string
	// Msgpack tells whether Raw is a msgpack envelope (else JSON).
	Msgpack bool
	// Raw is the envelope exactly as received: its signature verifies,
	// or it came in a batch signed as a whole and has none (p2p_batch.go).
	Raw []byte
	// JSON is the envelope as JSON: Raw for a JSON envelope, else the
	// envelope with its payload converted (which no longer verifies).
	JSON []byte
}

func (m *ReceivedMessage) size() int {
	if m.Msgpack {
		return len(m.Raw) + len(m.JSON)
	}
	return len(m.Raw)
}

// MessageFeed keeps the last envelopes received and hands new ones to
// subscribers (SSE and WebSocket observers).
type MessageFeed struct {
	mu    sync.Mutex
	kept  []ReceivedMessage // oldest first, from kept[head]
	head  int
	bytes int
	next  uint64 // seq of the next message
	subs  map[*FeedSubscription]struct{}
}

func (f *MessageFeed) init() {
	f.next = 1
	f.subs = map[*FeedSubscription]struct{}{}
}

// FeedSubscription receives envelopes as they are accepted.
type FeedSubscription struct {
	// C delivers envelopes in order; it is closed when the reader fell
	// too far behind (Lagged is then true) or on Close.
	C      chan ReceivedMessage
	f      *MessageFeed
	lagged bool
	once   sync.Once
}

// Subscribe delivers future envelopes; combine with Since to resume.
func (f *MessageFeed) Subscribe() *FeedSubscription {
	s := &FeedSubscription{C: make(chan ReceivedMessage, subBuffer), f: f}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

// Close stops delivery.
func (s *FeedSubscription) Close() {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.detach()
}

// detach removes s; f.mu is held.
func (s *FeedSubscription) detach() {
	s.once.Do(func() {
		delete(s.f.subs, s)
		close(s.C)
	})
}

// Lagged reports whether the channel was closed because the reader was
// too slow.
func (s *FeedSubscription) Lagged() bool {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.lagged
}

// Since returns the kept envelopes with Seq > after, in order, and whether
// that is all of them (false when some were already dropped).
func (f *MessageFeed) Since(after uint64) ([]ReceivedMessage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	live := f.kept[f.head:]
	first := f.next
	if len(live) > 0 {
		first = live[0].Seq
	}
	if after+1 < first {
		return append([]ReceivedMessage(nil), live...), false
	}
	skip := int(min(after+1-first, uint64(len(live))))
	return append([]ReceivedMessage(nil), live[skip:]...), true
}

// Last is the Seq of the newest envelope (0 when none).
func (f *MessageFeed) Last() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.next - 1
}

func (f *MessageFeed) publish(m ReceivedMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m.Seq = f.next
	f.next++
	f.kept = append(f.kept, m)
	f.bytes += m.size()
	for len(f.kept)-f.head > 1 && (len(f.kept)-f.head > feedSize || f.bytes > feedMaxBytes) {
		f.bytes -= f.kept[f.head].size()
		f.kept[f.head] = ReceivedMessage{}
		f.head++
	}
	if f.head > feedSize { // compact
		f.kept = append(f.kept[:0], f.kept[f.head:]...)
		f.head = 0
	}
	for s := range f.subs {
		select {
		case s.C <- m:
		default:
			s.lagged = true
			s.detach()
		}
	}
}

// closeAll ends every subscription (shutdown).
func (f *MessageFeed) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		s.detach()
	}
}

// Messages is the feed of envelopes received from peers.
func (n *Network) Messages() *MessageFeed {
	if n == nil {
		return nil
	}
	return &n.feed
}
