package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Client is one connection to the broker: MQTT 3.1.1, a persistent
// session (clean session off, so the broker keeps the subscriptions and the
// QoS 1 messages for this client_id while it is away), QoS 1 both ways,
// and reconnection with back-off for as long as it is open.
//
// Every subscription is made again on each connection, because a broker
// that restarted without persistence has forgotten the session.
type Client struct {
	opts Options
	log  *slog.Logger
	pc   paho.Client

	mu   sync.Mutex
	up   chan struct{} // closed while connected; replaced when the link drops
	down chan struct{} // closed when the current link drops; replaced on connect
	subs map[string]paho.MessageHandler
	// again are the filters whose retained messages are asked for again
	// a while after each connection (SubscribeRetained).
	again map[string]bool
	// broker is the broker of the last connection attempt: the one in
	// use once connected.
	broker atomic.Pointer[string]
	// leaving is set once the agent stops (Transport.Leave): no online
	// card is announced any more.
	leaving atomic.Bool

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	started   atomic.Bool

	// Connects counts successful connections; Drops lost ones.
	Connects, Drops atomic.Uint64
}

// Handler gets one message that arrived on a subscription. It returns
// once the message is dealt with (stored, or refused for good): only then
// is the broker acknowledged (PUBACK), so a message taken while the agent
// dies is delivered again. Handlers run one at a time, in arrival order.
type Handler func(topic string, payload []byte)

// Errors of a client's operations.
var (
	ErrClosed = errors.New("mqtt: client closed")
)

// New checks the options and builds a client; Start connects it.
func New(o Options) (*Client, error) {
	o.setDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dials, useTLS, _ := o.brokers()
	down := make(chan struct{})
	close(down) // not connected yet
	c := &Client{opts: o, log: o.Logger, up: make(chan struct{}), down: down, subs: map[string]paho.MessageHandler{},
		again: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	po := paho.NewClientOptions()
	for _, d := range dials {
		po.AddBroker(d)
	}
	po.SetClientID(o.ClientID).
		SetUsername(o.Username).
		SetPassword(o.Password).
		SetProtocolVersion(4). // 3.1.1, no silent fallback to 3.1
		SetCleanSession(false).
		SetKeepAlive(o.KeepAlive).
		SetPingTimeout(10 * time.Second).
		SetConnectTimeout(10 * time.Second).
		SetWriteTimeout(10 * time.Second).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(o.MaxReconnectInterval).
		SetConnectRetry(false). // the first connection is retried by Start, with jitter
		SetResumeSubs(false).   // onConnect subscribes every time
		SetOrderMatters(true).
		SetAutoAckDisabled(true).
		SetStore(newCopyStore()).
		SetDefaultPublishHandler(c.dispatch).
		SetOnConnectHandler(c.onConnect).
		SetConnectionLostHandler(c.onLost).
		SetConnectionAttemptHandler(func(broker *url.URL, tc *tls.Config) *tls.Config {
			b := broker.Host
			c.broker.Store(&b)
			return tc
		})
	if w := o.Will; w != nil {
		po.SetBinaryWill(w.Topic, w.Payload, 1, true)
	}
	if useTLS {
		// With several brokers the name each certificate is checked
		// against is the host dialled (crypto/tls takes it from the
		// address when ServerName is empty).
		host := ""
		if len(dials) == 1 {
			u, _ := url.Parse(o.URL)
			host = u.Hostname()
		}
		tc, err := o.tlsConfig(host)
		if err != nil {
			return nil, err
		}
		po.SetTLSConfig(tc)
	}
	c.pc = paho.NewClient(po)
	return c, nil
}

// Options are the client's options with defaults applied.
func (c *Client) Options() Options { return c.opts }

// Start begins connecting in the background and returns at once: an agent
// starts while its broker is away. Attempts back off from 1 s to
// MaxReconnectInterval, with jitter so that a fleet does not come back in
// step; after the first connection the client library reconnects by
// itself.
func (c *Client) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("mqtt: client already started")
	}
	go c.connectLoop()
	return nil
}

func (c *Client) connectLoop() {
	defer close(c.done)
	backoff := time.Second
	for {
		tok := c.pc.Connect()
		select {
		case <-tok.Done():
		case <-c.stop:
			return
		}
		err := tok.Error()
		if err == nil {
			return
		}
		d := backoff/2 + rand.N(backoff/2+1)
		c.log.Warn("mqtt: cannot connect to the broker; will retry", "url", c.opts.URL, "err", err, "retry_in", d)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.stop:
			t.Stop()
			return
		}
		backoff = min(backoff*2, c.opts.MaxReconnectInterval)
	}
}

func (c *Client) onConnect(pc paho.Client) {
	c.Connects.Add(1)
	c.mu.Lock()
	subs := make(map[string]paho.MessageHandler, len(c.subs))
	again := map[string]paho.MessageHandler{}
	for f, h := range c.subs {
		subs[f] = h
		if c.again[f] {
			again[f] = h
		}
	}
	c.mu.Unlock()
	// The client is marked up once the broker granted the subscriptions
	// (this runs on a goroutine of its own): an inbox must be there
	// before this agent sends what will be answered to it.
	for f, h := range subs {
		if !c.subscribeUntilGranted(pc, f, h) {
			return // the link dropped: the next connection subscribes again
		}
	}
	if a := c.opts.Announce; a != nil && !c.leaving.Load() {
		pc.Publish(a.Topic, 1, true, a.Payload) // not waited for: the next connection publishes it again
	}
	c.mu.Lock()
	select {
	case <-c.up:
	default:
		close(c.up)
		c.down = make(chan struct{})
	}
	down := c.down
	c.mu.Unlock()
	broker := c.opts.URL
	if b := c.broker.Load(); b != nil {
		broker = *b
	}
	c.log.Info("mqtt: connected", "broker", broker, "client_id", c.opts.ClientID)
	if len(again) > 0 {
		go c.askAgain(pc, again, down)
	}
}

// askAgain subscribes to the filters again at each of retainedAgain
// after a connection, unless the link dropped or the client closed first
// (the next connection asks again). A broker answers a subscription with
// the retained messages it holds; a cluster's nodes learn each other's
// retained messages and subscriptions late, the later the busier the
// cluster (NATS: a card published on one node while a subscription was
// made on another reached neither the subscriber's node's retained set
// nor the subscriber), so a later answer brings what the first missed.
func (c *Client) askAgain(pc paho.Client, filters map[string]paho.MessageHandler, down <-chan struct{}) {
	start := time.Now()
	for _, at := range retainedAgain {
		t := time.NewTimer(time.Until(start.Add(at)))
		select {
		case <-t.C:
		case <-down:
			t.Stop()
			return
		case <-c.stop:
			t.Stop()
			return
		}
		for f, h := range filters {
			if !c.subscribeUntilGranted(pc, f, h) {
				return
			}
		}
	}
}

// retainedAgain are the times after each connection at which the filters
// of SubscribeRetained are subscribed to again: each brings every
// retained message once more (a fleet of N agents: N cards to each).
var retainedAgain = [...]time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute}

// subscribeUntilGranted subscribes to f until the broker grants it,
// backing off from 200 ms to 5 s, and reports false if the link dropped
// or the client closed first. A broker may refuse one filter of a
// SUBACK (return code 0x80: not allowed, or a cluster that could not
// make the subscription durable yet) while the connection stays up; the
// client library reports that as success, so the code is read here.
func (c *Client) subscribeUntilGranted(pc paho.Client, f string, h paho.MessageHandler) bool {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := granted(pc.Subscribe(f, 1, h), f)
		if err == nil {
			return true
		}
		if !pc.IsConnectionOpen() {
			return false
		}
		c.log.Warn("mqtt: a subscription was not granted; asking again", "filter", f, "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.stop:
			t.Stop()
			return false
		}
		if !pc.IsConnectionOpen() {
			return false
		}
	}
}

// subscribeRefused is a SUBACK's return code for a refused filter.
const subscribeRefused = 0x80

// granted waits for a subscription's SUBACK (10 s at most) and says why
// the broker did not grant f, or nil.
func granted(tok paho.Token, f string) error {
	if !tok.WaitTimeout(10 * time.Second) {
		return errors.New("no SUBACK within 10 s")
	}
	if err := tok.Error(); err != nil {
		return err
	}
	if st, ok := tok.(*paho.SubscribeToken); ok && st.Result()[f] == subscribeRefused {
		return errors.New("the broker refused it (SUBACK 0x80)")
	}
	return nil
}

func (c *Client) onLost(_ paho.Client, err error) {
	c.Drops.Add(1)
	c.mu.Lock()
	select {
	case <-c.up:
		c.up = make(chan struct{})
		close(c.down)
	default:
	}
	c.mu.Unlock()
	c.log.Warn("mqtt: connection lost; reconnecting", "err", err)
}

// dispatch takes a message the library has no route for yet: one the
// broker delivers from a resumed session right after the connection,
// before this connection's subscriptions are made again.
func (c *Client) dispatch(pc paho.Client, m paho.Message) {
	c.mu.Lock()
	var h paho.MessageHandler
	for f, fh := range c.subs {
		if matchTopic(f, m.Topic()) {
			h = fh
			break
		}
	}
	c.mu.Unlock()
	if h == nil {
		m.Ack()
		return
	}
	h(pc, m)
}

// matchTopic reports whether topic matches the subscription filter
// (MQTT 3.1.1 §4.7: '+' one level, '#' the rest).
func matchTopic(filter, topic string) bool {
	for {
		f, frest, fmore := strings.Cut(filter, "/")
		if f == "#" {
			return true
		}
		t, trest, tmore := strings.Cut(topic, "/")
		if f != "+" && f != t {
			return false
		}
		if !fmore || !tmore {
			return fmore == tmore || (!tmore && frest == "#")
		}
		filter, topic = frest, trest
	}
}

func wrap(h Handler) paho.MessageHandler {
	return func(_ paho.Client, m paho.Message) {
		h(m.Topic(), m.Payload())
		m.Ack()
	}
}

// AckHandler gets one message that arrived on a subscription and calls
// ack exactly once when the message is dealt with, possibly later and from
// another goroutine: the broker is acknowledged (PUBACK) then. Handlers are
// called one at a time, in arrival order, without waiting for the acks.
type AckHandler func(topic string, payload []byte, ack func())

func wrapAck(h AckHandler) paho.MessageHandler {
	return func(_ paho.Client, m paho.Message) {
		h(m.Topic(), m.Payload(), m.Ack)
	}
}

// Up returns a channel that is closed while the client is connected.
func (c *Client) Up() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up
}

// Down returns a channel that is closed when the current connection drops
// (at once when there is none).
func (c *Client) Down() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.down
}

// WaitUp waits until the client is connected, ctx is done or the client
// is closed.
func (c *Client) WaitUp(ctx context.Context) error {
	select {
	case <-c.Up():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		return ErrClosed
	}
}

// Subscribe registers h for the topic filter at QoS 1. The subscription is
// made now when connected and again on every connection.
func (c *Client) Subscribe(ctx context.Context, filter string, h Handler) error {
	return c.subscribe(ctx, filter, wrap(h))
}

// SubscribeRetained is Subscribe for a filter whose retained messages
// are a catalogue (the agents' cards): a while after each connection the
// client subscribes again (three times: 5 s, 30 s and 2 min after it), so
// that the broker sends again the retained messages it holds (askAgain
// says why). h must take a message twice.
func (c *Client) SubscribeRetained(ctx context.Context, filter string, h Handler) error {
	c.mu.Lock()
	c.again[filter] = true
	c.mu.Unlock()
	return c.subscribe(ctx, filter, wrap(h))
}

// SubscribeAck is Subscribe for a handler that acknowledges by itself
// (see AckHandler).
func (c *Client) SubscribeAck(ctx context.Context, filter string, h AckHandler) error {
	return c.subscribe(ctx, filter, wrapAck(h))
}

func (c *Client) subscribe(ctx context.Context, filter string, h paho.MessageHandler) error {
	c.mu.Lock()
	c.subs[filter] = h
	c.mu.Unlock()
	if !c.pc.IsConnectionOpen() {
		return nil
	}
	tok := c.pc.Subscribe(filter, 1, h)
	if err := c.wait(ctx, tok); err != nil {
		return err
	}
	return granted(tok, filter)
}

// Publish sends payload to topic at QoS 1 and returns once the broker
// acknowledged it (PUBACK). The broker's acknowledgement is not delivery
// to a subscriber. While the link is down the message waits in the
// client's memory and goes out when it is back; ctx bounds the wait (the
// message may still go out later: QoS 1 is at least once).
func (c *Client) Publish(ctx context.Context, topic string, payload []byte, retained bool) error {
	if err := c.WaitUp(ctx); err != nil {
		return err
	}
	return c.wait(ctx, c.pc.Publish(topic, 1, retained, payload))
}

// PublishMany publishes each payload to its topic with QoS 1, all in
// flight together and handed to the connection in order (so the broker
// forwards them in that order), and waits for every PUBACK (until ctx
// ends); errs[i] is payload i's outcome.
func (c *Client) PublishMany(ctx context.Context, topics []string, payloads [][]byte) (errs []error) {
	errs = make([]error, len(payloads))
	if err := c.WaitUp(ctx); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	toks := make([]paho.Token, len(payloads))
	for i, p := range payloads {
		toks[i] = c.pc.Publish(topics[i], 1, false, p)
	}
	for i, tok := range toks {
		errs[i] = c.wait(ctx, tok)
	}
	return errs
}

func (c *Client) wait(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			return fmt.Errorf("mqtt: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		return ErrClosed
	}
}

// Close disconnects (waiting up to a second for in-flight packets, or
// less when ctx ends first). Safe to call twice.
func (c *Client) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		close(c.stop)
		if c.started.Load() {
			<-c.done
		}
		quiesce := uint(1000)
		if dl, ok := ctx.Deadline(); ok {
			quiesce = uint(max(min(time.Until(dl), time.Second), 0) / time.Millisecond)
		}
		c.pc.Disconnect(quiesce)
	})
	return nil
}
