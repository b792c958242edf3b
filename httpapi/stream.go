package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"time"

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
	s.streams.Add(1)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		defer s.streams.Done()
		w := &deadlineWriter{c: c, bw: bufio.NewWriterSize(c, 8<<10)}
		if header != "" {
			if _, err := w.WriteString(header); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
		}
		if err := fn(w, s.streamsDone); err != nil {
			s.log.Debug("stream ended", "err", err)
		}
		_ = w.Flush()
	})
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
