package httpapi

import (
	"net"
	"runtime/debug"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
)

// takeOver answers a request on the raw connection, outside fasthttp's
// timeouts: header is the status line and headers (without the blank line);
// fn writes the body. The connection is closed afterwards. Streams are
// tracked so that Shutdown can wait for them; done is closed on shutdown.
// With an empty header, fn writes the header itself (sse.Header).
func (s *Server) takeOver(ctx *fasthttp.RequestCtx, header string, fn func(w *sse.Writer, done <-chan struct{}) error) {
	revoked := s.revoked(ctx)
	path := string(ctx.Path())
	s.streams.Add(1)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		defer s.streams.Done()
		defer s.recoverStream(path, func() {})
		done, stop := s.streamDone(revoked, func() {})
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
			s.log.Debug("stream ended", "err", err)
		}
		_ = w.Flush()
	})
}

// recoverStream is deferred by every stream (SSE, WebSocket), which runs
// on a hijacked connection outside the request path's recovery: a panic
// is logged and counted like a handler's, and ends only that stream
// (onPanic runs, then the connection is closed) instead of the process.
func (s *Server) recoverStream(path string, onPanic func()) {
	if p := recover(); p != nil {
		s.panics.Inc()
		s.log.Error("stream panicked", "path", path, "panic", p, "stack", string(debug.Stack()))
		onPanic()
	}
}

// revoked is the channel closed when the token of the request's
// principal is revoked (nil for public routes and the admin token).
func (s *Server) revoked(ctx *fasthttp.RequestCtx) <-chan struct{} {
	p, ok := ctx.UserValue(principalKey{}).(auth.Principal)
	if !ok {
		return nil
	}
	return s.a.Tokens().Revoked(p)
}

// streamDone is the end signal of one stream: closed on shutdown, or when
// revoked is closed (then onRevoke runs first). stop releases it when the
// stream is over.
func (s *Server) streamDone(revoked <-chan struct{}, onRevoke func()) (done <-chan struct{}, stop func()) {
	if revoked == nil {
		return s.streamsDone, func() {}
	}
	d := make(chan struct{})
	end := make(chan struct{})
	go func() {
		select {
		case <-s.streamsDone:
		case <-revoked:
			onRevoke()
		case <-end:
			return
		}
		close(d)
	}()
	return d, func() { close(end) }
}
