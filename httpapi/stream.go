package httpapi

import (
	"context"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/internal/sse"
)

// streamer runs the connections that routes take over, SSE (takeOver) and
// WebSocket (upgrade, websocket.go), outside the request path: it tracks
// them so that Shutdown can wait for them, recovers their panics, and
// ends each on shutdown or when the token that opened it is revoked. The
// handler types that stream hold it, not the Server.
type streamer struct {
	wg sync.WaitGroup
	// done is closed when shutdown starts.
	done chan struct{}
	// bg is cancelled when shutdown starts; work a stream queues uses it.
	bg     context.Context
	log    *slog.Logger
	panics *metrics.Counter
	tokens *auth.Tokens
}

// takeOver answers a request on the raw connection, outside fasthttp's
// timeouts: header is the status line and headers (without the blank line);
// fn writes the body. The connection is closed afterwards. Streams are
// tracked so that Shutdown can wait for them; done is closed on shutdown.
// With an empty header, fn writes the header itself (sse.Header).
func (st *streamer) takeOver(ctx *fasthttp.RequestCtx, header string, fn func(w *sse.Writer, done <-chan struct{}) error) {
	revoked := st.revoked(ctx)
	path := string(ctx.Path())
	st.wg.Add(1)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		defer st.wg.Done()
		defer st.recoverStream(path, func() {})
		done, stop := st.streamDone(revoked, func() {})
		defer stop()
		w := sse.NewWriter(c)
		if header != "" {
			if _, err := w.WriteString(header); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
		}
		if err := fn(w, done); err != nil {
			st.log.Debug("stream ended", "err", err)
		}
		_ = w.Flush()
	})
}

// recoverStream is deferred by every stream (SSE, WebSocket), which runs
// on a hijacked connection outside the request path's recovery: a panic
// is logged and counted like a handler's, and ends only that stream
// (onPanic runs, then the connection is closed) instead of the process.
func (st *streamer) recoverStream(path string, onPanic func()) {
	if p := recover(); p != nil {
		st.panics.Inc()
		st.log.Error("stream panicked", "path", path, "panic", p, "stack", string(debug.Stack()))
		onPanic()
	}
}

// revoked is the channel closed when the token of the request's
// principal is revoked (nil for public routes and the admin token).
func (st *streamer) revoked(ctx *fasthttp.RequestCtx) <-chan struct{} {
	p, ok := ctx.UserValue(principalKey{}).(auth.Principal)
	if !ok {
		return nil
	}
	return st.tokens.Revoked(p)
}

// streamDone is the end signal of one stream: closed on shutdown, or when
// revoked is closed (then onRevoke runs first). stop releases it when the
// stream is over.
func (st *streamer) streamDone(revoked <-chan struct{}, onRevoke func()) (done <-chan struct{}, stop func()) {
	if revoked == nil {
		return st.done, func() {}
	}
	d := make(chan struct{})
	end := make(chan struct{})
	go func() {
		select {
		case <-st.done:
		case <-revoked:
			onRevoke()
		case <-end:
			return
		}
		close(d)
	}()
	return d, func() { close(end) }
}
