// Package wstransport is the WebSocket wire of the transport seam: it
// carries tier-1 batches (Kind Batch) to an upstream agent's stream,
// /api/v1/synapse/tier1/stream, for the uplink endpoint ws://host:port
// (or wss://), with a window of batches in flight (SendMany: tier1.Uplink
// uses it as a ManySender). The upstream answers each batch, in order,
// once it is durable ({"ok": true, ...}) or refused ({"ok": false,
// "error": {...}}), so the order holds and each answer is that batch's
// outcome, classified as for HTTP (transport.Classify). The handshake
// carries the message's Authorization and X-Synapse-Source-Agent headers,
// so the upstream deduplicates on (source agent, batch_id) as for the
// HTTP uplink. Any failure of the connection is Retry, unreached, for the
// batches not answered yet: they go again on a new connection (a batch
// that did arrive is then a duplicate there).
package wstransport

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Schemes are the destination schemes a Transport serves.
var Schemes = []string{"ws", "wss"}

// StreamPath is the upstream's tier-1 stream, after the endpoint.
const StreamPath = wire.APIPrefix + "/tier1/stream"

// idle is how long an unused connection is kept: the upstream pings
// every 30 s and closes a connection whose pong does not come within 10
// s, and this wire reads only while it waits for answers, so a connection
// idle longer than that is dialled anew rather than found dead.
const idle = 20 * time.Second

// Transport is the WebSocket wire; safe for concurrent use (the sends on
// one connection take turns).
type Transport struct {
	mu     sync.Mutex
	conns  map[string]*conn // by destination and handshake headers
	closed bool
}

var _ transport.Transport = (*Transport)(nil)

// New returns a Transport with no connection yet.
func New() *Transport { return &Transport{conns: map[string]*conn{}} }

// conn is one connection to an upstream and its turn.
type conn struct {
	url    string
	header http.Header

	mu       sync.Mutex
	c        *websocket.Conn
	lastUsed time.Time
}

// answer is the upstream's answer to one batch.
type answer struct {
	OK    bool        `msgpack:"ok"`
	Error *wire.Error `msgpack:"error"`
}

// Send delivers one batch (a window of one).
func (t *Transport) Send(ctx context.Context, m *transport.Message) transport.Outcome {
	return t.SendMany(ctx, []*transport.Message{m})[0]
}

// SendMany writes the batches on one connection, then reads their
// answers in order: outs[i] is ms[i]'s outcome. Every message must be a
// Batch for the same destination with the same Authorization and source
// agent (the uplink's are); one that is not is refused, unsent.
func (t *Transport) SendMany(ctx context.Context, ms []*transport.Message) []transport.Outcome {
	outs := make([]transport.Outcome, len(ms))
	if len(ms) == 0 {
		return outs
	}
	first := ms[0]
	var send []int
	for i, m := range ms {
		switch {
		case m.Kind != transport.Batch:
			outs[i] = transport.Refused(fmt.Errorf("websocket carries tier-1 batches, not %s messages", m.Kind))
		case m.To != first.To || key(m) != key(first):
			outs[i] = transport.Refused(fmt.Errorf("websocket: one destination per window"))
		default:
			send = append(send, i)
		}
	}
	if len(send) == 0 {
		return outs
	}
	c, err := t.conn(first)
	if err != nil {
		return refuseAll(outs, send, err)
	}
	bodies := make([][]byte, len(send))
	for j, i := range send {
		bodies[j] = ms[i].Body
	}
	for j, o := range c.window(ctx, bodies) {
		outs[send[j]] = o
	}
	return outs
}

func refuseAll(outs []transport.Outcome, idx []int, err error) []transport.Outcome {
	for _, i := range idx {
		outs[i] = transport.Refused(err)
	}
	return outs
}

// key names a message's connection: its destination and handshake
// headers.
func key(m *transport.Message) string {
	return m.To + "\x00" + m.Header[transport.HeaderAuthorization] + "\x00" + m.Header[transport.HeaderSourceAgent]
}

// conn returns the connection of m's destination (not dialled yet).
func (t *Transport) conn(m *transport.Message) (*conn, error) {
	to := strings.ToLower(m.To)
	if !strings.HasPrefix(to, "ws://") && !strings.HasPrefix(to, "wss://") {
		return nil, fmt.Errorf("websocket: %q is not a ws:// or wss:// endpoint", m.To)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("websocket: transport closed")
	}
	k := key(m)
	c := t.conns[k]
	if c == nil {
		h := http.Header{}
		for _, name := range []string{transport.HeaderAuthorization, transport.HeaderSourceAgent} {
			if v := m.Header[name]; v != "" {
				h.Set(name, v)
			}
		}
		c = &conn{url: strings.TrimRight(m.To, "/") + StreamPath, header: h}
		t.conns[k] = c
	}
	return c, nil
}

// window sends bodies and reads their answers.
func (c *conn) window(ctx context.Context, bodies [][]byte) []transport.Outcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	outs := make([]transport.Outcome, len(bodies))
	fail := func(from int, err error) []transport.Outcome {
		c.closeLocked()
		for i := from; i < len(outs); i++ {
			outs[i] = transport.Unreachable(err)
		}
		return outs
	}
	ws, err := c.dial(ctx)
	if err != nil {
		return fail(0, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = ws.SetWriteDeadline(dl)
		_ = ws.SetReadDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = ws.SetReadDeadline(time.Now()) })
	defer stop()
	for _, b := range bodies {
		if err := ws.WriteMessage(websocket.BinaryMessage, b); err != nil {
			// Those written may have arrived: all go again.
			return fail(0, fmt.Errorf("websocket %s: send: %w", c.url, err))
		}
	}
	for i := range bodies {
		_, b, err := ws.ReadMessage()
		if err != nil {
			return fail(i, fmt.Errorf("websocket %s: answer %d of %d: %w", c.url, i+1, len(bodies), err))
		}
		var a answer
		if err := wire.Msgpack.Unmarshal(b, &a); err != nil {
			return fail(i, fmt.Errorf("websocket %s: answer %d is not an answer: %w", c.url, i+1, err))
		}
		if a.OK {
			outs[i] = transport.Outcome{Class: transport.Delivered}
			continue
		}
		e := a.Error
		if e == nil {
			e = wire.Errorf(wire.CodeInternal, "refused without an error")
		}
		outs[i] = transport.Classify(transport.Batch, transport.Answer{Status: e.Status(), Error: e})
	}
	_ = ws.SetReadDeadline(time.Time{})
	_ = ws.SetWriteDeadline(time.Time{})
	c.lastUsed = time.Now()
	return outs
}

// dial returns the open connection, dialling when there is none or it was
// idle too long.
func (c *conn) dial(ctx context.Context) (*websocket.Conn, error) {
	if c.c != nil && time.Since(c.lastUsed) > idle {
		c.closeLocked()
	}
	if c.c != nil {
		return c.c, nil
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 16 << 10, WriteBufferSize: 64 << 10}
	ws, resp, err := d.DialContext(ctx, c.url, c.header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("websocket %s: HTTP %d: %w", c.url, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("websocket %s: %w", c.url, err)
	}
	c.c, c.lastUsed = ws, time.Now()
	return ws, nil
}

func (c *conn) closeLocked() {
	if c.c != nil {
		_ = c.c.Close()
		c.c = nil
	}
}

// Close ends every connection (with a close frame); safe twice.
func (t *Transport) Close() error {
	t.mu.Lock()
	conns := t.conns
	t.conns, t.closed = map[string]*conn{}, true
	t.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		if c.c != nil {
			_ = c.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
				time.Now().Add(time.Second))
		}
		c.closeLocked()
		c.mu.Unlock()
	}
	return nil
}
