package httpapi

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// WebSocket timing (TP §9.2.2): a ping every 30 s, a pong within 10 s.
const (
	wsPingEvery  = 30 * time.Second
	wsPongWait   = 10 * time.Second
	wsWriteWait  = 10 * time.Second
	wsDrainWait  = 2 * time.Second
	tier1Window  = 256 // batches read ahead of their acknowledgements
	wsBufferSize = 64 << 10
)

// checkOrigin admits clients that send no Origin (devices, programs) and
// browsers on the agent's own origin; any other Origin is refused.
func checkOrigin(ctx *fasthttp.RequestCtx) bool {
	origin := ctx.Request.Header.Peek("Origin")
	if len(origin) == 0 {
		return true
	}
	u, err := url.Parse(string(origin))
	if err != nil {
		return false
	}
	return bytes.EqualFold([]byte(u.Host), ctx.Host())
}

func (s *Server) upgrade(ctx *fasthttp.RequestCtx, handler func(c *websocket.Conn)) error {
	up := websocket.FastHTTPUpgrader{
		ReadBufferSize: wsBufferSize, WriteBufferSize: wsBufferSize,
		CheckOrigin: checkOrigin,
		Error: func(ctx *fasthttp.RequestCtx, status int, reason error) {
			code := wire.CodeMessageFormatInvalid
			if status == fasthttp.StatusForbidden {
				code = wire.CodePermissionDenied
			}
			// the library's reasons begin with "websocket: " already
			e := wire.Errorf(code, "WebSocket upgrade refused: %s", strings.TrimPrefix(reason.Error(), "websocket: "))
			ct, body, _ := encode(ctx, wire.ErrorBody{Error: e})
			writeRaw(ctx, status, ct, body)
		},
	}
	revoked := s.revoked(ctx)
	path := string(ctx.Path())
	s.streams.Add(1)
	if err := up.Upgrade(ctx, func(c *websocket.Conn) {
		defer s.streams.Done()
		defer c.Close()
		defer s.recoverStream(path, func() {
			_ = c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "internal error"), time.Now().Add(wsWriteWait))
		})
		// A revoked token ends the connection: a close frame (1008), then
		// the socket, which ends the handler's reads and writes.
		_, stop := s.streamDone(revoked, func() {
			_ = c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "token revoked"), time.Now().Add(wsWriteWait))
			_ = c.UnderlyingConn().Close()
		})
		defer stop()
		handler(c)
	}); err != nil {
		s.streams.Done() // the upgrader has answered the request
	}
	return nil
}

// startKeepAlive runs keepAlive and returns the function that stops it and
// waits for it (the connection must not be used once its handler returned)
// and, when the server is shutting down, sends the close frame (1001) — after
// the handler answered everything it had read.
func (s *Server) startKeepAlive(c *websocket.Conn) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.keepAlive(c, done)
	}()
	return func() {
		close(done)
		wg.Wait()
		select {
		case <-s.streamsDone:
			_ = c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "agent shutting down"), time.Now().Add(wsWriteWait))
			drain(c)
		default:
		}
	}
}

// drain reads and discards what the peer still sends, until it closes or
// a short deadline passes: closing a socket with unread data makes the
// kernel reset it, and the peer would then lose the answers (and the close
// frame) already sent.
func drain(c *websocket.Conn) {
	nc := c.UnderlyingConn()
	_ = nc.SetReadDeadline(time.Now().Add(wsDrainWait))
	buf := make([]byte, 16<<10)
	for {
		if _, err := nc.Read(buf); err != nil {
			return
		}
	}
}

// keepAlive pings the peer, ends the connection when a pong is late or on
// shutdown, and returns when done is closed.
func (s *Server) keepAlive(c *websocket.Conn, done <-chan struct{}) {
	c.SetPongHandler(func(string) error {
		return c.SetReadDeadline(time.Now().Add(wsPingEvery + wsPongWait))
	})
	_ = c.SetReadDeadline(time.Now().Add(wsPingEvery + wsPongWait))
	t := time.NewTicker(wsPingEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := c.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteWait)); err != nil {
				return
			}
		case <-s.streamsDone:
			// Stop reading; the handler answers what it has read, and
			// stop sends the close frame after that.
			_ = c.SetReadDeadline(time.Now())
			return
		case <-done:
			return
		}
	}
}

// tier1Stream serves GET /tier1/stream: each binary message is one batch;
// each is answered, in order, by a msgpack map {"ok":true,"accepted":N,
// "batch_id":...} once durable, or {"ok":false,"error":{...}}. Up to 256
// batches may wait for their answers; beyond that the server stops reading.
func (s *Server) tier1Stream(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	scope := tier1Scope(ctx, p)
	max := int64(s.a.Config().Tier1.MaxBatchBytes)
	return s.upgrade(ctx, func(c *websocket.Conn) {
		c.SetReadLimit(max)
		stop := s.startKeepAlive(c)
		defer stop()

		// order holds one slot per batch in arrival order; the writer
		// answers them in that order as they are filled.
		order := make(chan chan tier1Ack, tier1Window)
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			writeAcks(c.UnderlyingConn(), order)
		}()
		in := s.a.Tier1()
		for {
			mt, rd, err := c.NextReader()
			if err != nil {
				break
			}
			// A buffer lent for this message (msgbuf.go): IngestAsync keeps
			// nothing of the bytes it is given once it returns.
			buf := s.msgBufs.get()
			if _, err := buf.ReadFrom(rd); err != nil {
				s.msgBufs.put(buf)
				break
			}
			data := buf.Bytes()
			slot := make(chan tier1Ack, 1)
			order <- slot // blocks when tier1Window batches are unanswered
			if mt != websocket.BinaryMessage {
				s.msgBufs.put(buf)
				slot <- tier1Ack{Error: wire.Errorf(wire.CodeMessageFormatInvalid, "send each batch as one binary message")}
				continue
			}
			err = in.IngestAsync(s.bg, scope, "", data, func(r tier1.Result, err error) {
				if err != nil {
					slot <- tier1Ack{BatchID: r.BatchID, Error: wire.AsError(err)}
					return
				}
				slot <- tier1Ack{OK: true, Accepted: r.Accepted, BatchID: r.BatchID, Duplicate: r.Duplicate}
			})
			s.msgBufs.put(buf)
			if err != nil {
				slot <- tier1Ack{Error: wire.AsError(err)}
			}
		}
		close(order)
		<-wrote // every batch read is answered (or the connection broke)
	})
}

// writeAcks answers the batches of order, in order, each once its slot is
// filled (after its batch is durable). Answers that are ready together —
// the batches of one shared commit — go out in one write: each is still
// its own WebSocket message. It returns when order is closed, reading (and
// dropping) the rest once a write failed.
//
// The frames are written to the connection itself, not through the
// websocket.Conn (which makes one write per message): a server frame is
// unmasked and uncompressed (compression is not offered), and a single
// Write of whole frames does not interleave with the library's control
// frames (ping, close), which are single Writes too.
func writeAcks(nc net.Conn, order <-chan chan tier1Ack) {
	var buf []byte
	broken := false
	var next chan tier1Ack // taken from order, not answered yet
	for {
		if next == nil {
			var ok bool
			if next, ok = <-order; !ok {
				return
			}
		}
		ack := <-next
		next = nil
		if broken {
			continue
		}
		buf = appendAckFrame(buf[:0], &ack)
	more:
		for len(buf) < wsBufferSize {
			select {
			case slot, ok := <-order:
				if !ok {
					break more
				}
				select {
				case ack := <-slot:
					buf = appendAckFrame(buf, &ack)
				default:
					next = slot
					break more
				}
			default:
				break more
			}
		}
		_ = nc.SetWriteDeadline(time.Now().Add(wsWriteWait))
		_, err := nc.Write(buf)
		broken = err != nil
	}
}

// appendAckFrame appends ack as one final, unmasked binary WebSocket frame
// (RFC 6455 §5.2) holding its msgpack map.
func appendAckFrame(dst []byte, ack *tier1Ack) []byte {
	b, err := wire.Msgpack.Marshal(ack)
	if err != nil { // a tier1Ack always encodes; answer something valid anyway
		b, _ = wire.Msgpack.Marshal(&tier1Ack{Error: wire.Errorf(wire.CodeInternal, "encode answer: %v", err)})
	}
	dst = append(dst, 0x80|websocket.BinaryMessage)
	switch n := len(b); {
	case n < 126:
		dst = append(dst, byte(n))
	case n <= 0xffff:
		dst = append(dst, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return append(dst, b...)
}
