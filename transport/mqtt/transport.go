package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/synapse-edge/synapse/transport"
)

// Transport is the MQTT wire of the transport seam: registered in the
// agent's transport.Mux for mqtt and mqtts destinations, it publishes
// tier-1 batches (Kind Batch) to the agent's tier-1 topic, and carries
// envelopes between agents (Kind Envelope; p2p.go). The
// destination URL names the broker of Options ("mqtt://" alone means that
// broker); a destination on another broker is refused.
//
// It is built before the agent and started once the agent knows its
// identity (the default client_id and the topic levels); until then, and
// while the broker is away, Send waits (up to its ctx) and then answers
// Retry, unreached.
type Transport struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	c        *Client
	started  chan struct{} // closed by Start
	system   string
	agent    string
	receiver transport.Receiver
	docs     Documents
	card     *Card
	sign     Signer
	dir      *Directory
	closed   bool
	subs     []subscription // AddSubscription's, made on every connection

	pmu     sync.Mutex
	pending map[string]chan *frame // requests waiting for their answer, by frame id

	sem       chan struct{} // inbox requests being handled
	wg        sync.WaitGroup
	bg        context.Context
	cancelBg  context.CancelFunc
	stop      chan struct{}
	closeOnce sync.Once

	// Malformed counts inbox messages dropped as malformed.
	Malformed atomic.Uint64
}

var _ transport.Transport = (*Transport)(nil)

// Schemes are the destination schemes a Transport serves.
var Schemes = []string{"mqtt", "mqtts"}

// NewTransport checks o (ClientID may be empty: Start defaults it to the
// agent_id).
func NewTransport(o Options) (*Transport, error) {
	o.setDefaults()
	check := o
	if check.ClientID == "" {
		check.ClientID = "-"
	}
	if err := check.Validate(); err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	return &Transport{opts: o, log: o.Logger, started: make(chan struct{}), pending: map[string]chan *frame{},
		sem: make(chan struct{}, maxConcurrentRequests), bg: bg, cancelBg: cancel, stop: make(chan struct{})}, nil
}

// Start connects as agentID of systemID (in the background: see
// Client.Start).
func (t *Transport) Start(ctx context.Context, systemID, agentID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c != nil {
		return errors.New("mqtt: transport already started")
	}
	o := t.opts
	if o.ClientID == "" {
		o.ClientID = agentID
	}
	if err := t.presence(&o, systemID, agentID); err != nil {
		return err
	}
	c, err := New(o)
	if err != nil {
		return err
	}
	inbox, err := t.topics().Inbox(agentID)
	if err != nil {
		return err
	}
	t.c, t.system, t.agent = c, systemID, agentID
	// Made on every connection, the first one included.
	if err := c.Subscribe(ctx, inbox, t.onInbox); err != nil {
		return err
	}
	if err := t.subscribeCards(ctx, c); err != nil {
		return err
	}
	for _, s := range t.subs {
		if err := c.SubscribeAck(ctx, s.topic, s.h); err != nil {
			return err
		}
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	close(t.started)
	return nil
}

// subscription is a topic filter and its handler (AddSubscription).
type subscription struct {
	topic string
	h     AckHandler
}

// AddSubscription subscribes, from the next Start on (and again on every
// connection), to topic with h, which acknowledges each message itself
// (QoS 1, SubscribeAck); the southbound bridge of tier1/southbound is
// one. Call it before Start.
func (t *Transport) AddSubscription(topic string, h func(topic string, payload []byte, ack func())) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c != nil {
		return errors.New("mqtt: AddSubscription after Start")
	}
	t.subs = append(t.subs, subscription{topic: topic, h: h})
	return nil
}

// Context is cancelled when the transport closes: work started for a
// message it delivered (AddSubscription's) is bounded by it.
func (t *Transport) Context() context.Context { return t.bg }

// Client is the connection (nil before Start).
func (t *Transport) Client() *Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c
}

// Close stops taking requests, lets those being handled finish (until
// ctx ends) and disconnects; safe twice, and before Start.
func (t *Transport) Close(ctx context.Context) error {
	t.closeOnce.Do(func() {
		close(t.stop)
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		done := make(chan struct{})
		go func() { t.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
		t.cancelBg()
		if c := t.Client(); c != nil {
			t.leave(ctx, c)
			_ = c.Close(ctx)
		}
	})
	return nil
}

func (t *Transport) topics() Topics { return Topics{Prefix: t.opts.TopicPrefix} }

// client waits for Start.
func (t *Transport) client(ctx context.Context) (*Client, error) {
	select {
	case <-t.started:
		return t.Client(), nil
	case <-ctx.Done():
		return nil, errors.New("mqtt: not connected yet")
	}
}

// Send delivers m (see the type's doc).
func (t *Transport) Send(ctx context.Context, m *transport.Message) transport.Outcome {
	if err := t.sameBroker(m.To); err != nil {
		return transport.Refused(err)
	}
	c, err := t.client(ctx)
	if err != nil {
		return transport.Unreachable(err)
	}
	switch m.Kind {
	case transport.Envelope, transport.Fetch:
		return t.request(ctx, c, m)
	case transport.Batch:
		topic, err := t.batchTopic(m)
		if err != nil {
			return transport.Refused(err)
		}
		if err := c.Publish(ctx, topic, m.Body, false); err != nil {
			return transport.Unreachable(err)
		}
		return transport.Outcome{Class: transport.Delivered}
	}
	return transport.Refused(fmt.Errorf("mqtt carries no %s messages", m.Kind))
}

// batchTopic is the tier-1 topic of a Batch message.
func (t *Transport) batchTopic(m *transport.Message) (string, error) {
	source := m.Header[transport.HeaderSourceAgent]
	if source == "" {
		source = t.agent
	}
	return t.topics().Tier1(t.system, source, m.Header[transport.HeaderRoutine])
}

// SendMany delivers several Batch messages with all of them in flight at
// once (tier1.Uplink's window): they are published in order from this
// one client, so the broker forwards them in that order, and each is
// Delivered at its PUBACK. outs[i] is ms[i]'s outcome; a message that is
// not a Batch for this broker is refused without being sent.
func (t *Transport) SendMany(ctx context.Context, ms []*transport.Message) []transport.Outcome {
	outs := make([]transport.Outcome, len(ms))
	// Started first: the topics need the agent's identity.
	c, err := t.client(ctx)
	if err != nil {
		for i := range outs {
			outs[i] = transport.Unreachable(err)
		}
		return outs
	}
	var idx []int
	var topics []string
	var bodies [][]byte
	for i, m := range ms {
		err := t.sameBroker(m.To)
		if err == nil && m.Kind != transport.Batch {
			err = fmt.Errorf("mqtt: SendMany carries batches, not %s messages", m.Kind)
		}
		var topic string
		if err == nil {
			topic, err = t.batchTopic(m)
		}
		if err != nil {
			outs[i] = transport.Refused(err)
			continue
		}
		idx, topics, bodies = append(idx, i), append(topics, topic), append(bodies, m.Body)
	}
	if len(idx) == 0 {
		return outs
	}
	for j, err := range c.PublishMany(ctx, topics, bodies) {
		if err != nil {
			outs[idx[j]] = transport.Unreachable(err)
		} else {
			outs[idx[j]] = transport.Outcome{Class: transport.Delivered}
		}
	}
	return outs
}

// sameBroker checks that a destination URL names this transport's broker
// (or none: "mqtt://").
func (t *Transport) sameBroker(to string) error {
	u, err := url.Parse(to)
	if err != nil {
		return errors.New("mqtt: destination is not a URL")
	}
	if u.Host == "" {
		return nil
	}
	want, _ := url.Parse(t.opts.URL)
	if u.Scheme != want.Scheme || u.Hostname() != want.Hostname() || portOf(u) != portOf(want) {
		return fmt.Errorf("mqtt: destination %s://%s is not this agent's broker", u.Scheme, u.Host)
	}
	return nil
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "mqtts" {
		return "8883"
	}
	return "1883"
}
