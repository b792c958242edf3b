package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"runtime/debug"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/valyala/fasthttp"
)

// streamWriteTimeout bounds each write of a taken-over connection, so a
// client that stops reading cannot hold a stream forever.
const streamWriteTimeout = 30 * time.Second

// takeOver answers a request on the raw connection, outside fasthttp's
// timeouts: header is the status line and headers (without the blank line);
// fn writes the body. The connection is closed afterwards. Streams are
// tracked so that Shutdown can wait for them; done is closed on shutdown.
// With an empty header, fn writes the header itself (httpHeader).
func (s *Server) takeOver(ctx *fasthttp.RequestCtx, header string, fn func(w *deadlineWriter, done <-chan struct{}) error) {
	revoked := s.revoked(ctx)
	path := string(ctx.Path())
	s.streams.Add(1)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		defer s.streams.Done()
		defer s.recoverStream(path, func() {})
		done, stop := s.streamDone(revoked, func() {})
		defer stop()
		w := &deadlineWriter{c: c, bw: bufio.NewWriterSize(c, 8<<10)}
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

// deadlineWriter is a buffered writer that renews the write deadline on
// every flush.
type deadlineWriter struct {
	c  net.Conn
	bw *bufio.Writer
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if w.bw.Available() < len(p) {
		_ = w.c.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	}
	return w.bw.Write(p)
}

func (w *deadlineWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

func (w *deadlineWriter) Flush() error {
	_ = w.c.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return w.bw.Flush()
}

func httpHeader(status int, contentType string, extra ...string) string {
	h := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nServer: synapse\r\nConnection: close\r\n", status, fasthttp.StatusMessage(status), contentType)
	for _, e := range extra {
		h += e + "\r\n"
	}
	return h + "\r\n"
}

// followSSE writes the items of c as they come, with a keep-alive comment
// every sseKeepAlive (which also finds clients that went away), until emit
// says the stream is over, the server shuts down (done), or c is closed;
// then lagged tells whether the reader fell behind (the caller reloads
// from where it was) or the source ended.
func followSSE[T any](w *deadlineWriter, done <-chan struct{}, c <-chan T, lagged func() bool, emit func(T) (end bool, err error)) (bool, error) {
	keep := time.NewTicker(sseKeepAlive)
	defer keep.Stop()
	for {
		select {
		case it, ok := <-c:
			if !ok {
				return lagged(), nil
			}
			end, err := emit(it)
			if err != nil {
				return false, err
			}
			if err := w.Flush(); err != nil {
				return false, err
			}
			if end {
				return false, nil
			}
		case <-keep.C:
			if _, err := w.WriteString(": keep-alive\n\n"); err != nil {
				return false, err
			}
			if err := w.Flush(); err != nil {
				return false, err
			}
		case <-done:
			return false, nil
		}
	}
}
