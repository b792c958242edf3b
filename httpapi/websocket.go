package httpapi

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// WebSocket timing (TP §9.2.2): a ping every 30 s, a pong within 10 s.
const (
	wsPingEvery  = 30 * time.Second
	wsPongWait   = 10 * time.Second
	wsWriteWait  = 10 * time.Second
	wsDrainWait  = 2 * time.Second
	wsBufferSize = 64 << 10
)

// A browser cannot set Authorization on a WebSocket, so the bearer token
// may come as a subprotocol instead (as Kubernetes does it): the client
// offers WSProtocol and WSBearerPrefix + the token in unpadded base64url,
//
//	new WebSocket(url, ["synapse", "base64url.bearer.authorization.synapse." + b64url(token)])
//
// and the server answers Sec-WebSocket-Protocol: synapse — never the
// token's entry. A token in the URL is never read (it would end up in
// logs and histories).
const (
	WSProtocol     = "synapse"
	WSBearerPrefix = "base64url.bearer.authorization.synapse."
)

// wsBearer returns the token of a WebSocket upgrade request offered as a
// WSBearerPrefix subprotocol.
func wsBearer(ctx *fasthttp.RequestCtx) ([]byte, bool) {
	h := &ctx.Request.Header
	if !h.IsGet() || !bytes.EqualFold(bytes.TrimSpace(h.Peek(fasthttp.HeaderUpgrade)), []byte("websocket")) {
		return nil, false
	}
	for _, v := range h.PeekAll(fasthttp.HeaderSecWebSocketProtocol) {
		for p := range bytes.SplitSeq(v, []byte(",")) {
			enc, ok := bytes.CutPrefix(bytes.TrimSpace(p), []byte(WSBearerPrefix))
			if !ok {
				continue
			}
			tok, err := base64.RawURLEncoding.AppendDecode(nil, enc)
			return tok, err == nil && len(tok) > 0
		}
	}
	return nil, false
}

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

func (st *streamer) upgrade(ctx *fasthttp.RequestCtx, handler func(c *websocket.Conn)) error {
	up := websocket.FastHTTPUpgrader{
		ReadBufferSize: wsBufferSize, WriteBufferSize: wsBufferSize,
		CheckOrigin:  checkOrigin,
		Subprotocols: []string{WSProtocol}, // echoed when offered; the token's entry never is
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
	revoked := st.revoked(ctx)
	path := string(ctx.Path())
	st.wg.Add(1)
	if err := up.Upgrade(ctx, func(c *websocket.Conn) {
		defer st.wg.Done()
		defer c.Close()
		defer st.recoverStream(path, func() {
			_ = c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseInternalServerErr, "internal error"), time.Now().Add(wsWriteWait))
		})
		// A revoked token ends the connection: a close frame (1008), then
		// the socket, which ends the handler's reads and writes.
		_, stop := st.streamDone(revoked, func() {
			_ = c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "token revoked"), time.Now().Add(wsWriteWait))
			_ = c.UnderlyingConn().Close()
		})
		defer stop()
		handler(c)
	}); err != nil {
		st.wg.Done() // the upgrader has answered the request
	}
	return nil
}

// startKeepAlive runs keepAlive and returns the function that stops it and
// waits for it (the connection must not be used once its handler returned)
// and, when the server is shutting down, sends the close frame (1001) — after
// the handler answered everything it had read.
func (st *streamer) startKeepAlive(c *websocket.Conn) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		st.keepAlive(c, done)
	}()
	return func() {
		close(done)
		wg.Wait()
		select {
		case <-st.done:
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
func (st *streamer) keepAlive(c *websocket.Conn, done <-chan struct{}) {
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
		case <-st.done:
			// Stop reading; the handler answers what it has read, and
			// stop sends the close frame after that.
			_ = c.SetReadDeadline(time.Now())
			return
		case <-done:
			return
		}
	}
}
