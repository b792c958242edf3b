// Package sse writes server-sent event streams, and the other answers
// streamed on a connection taken over from fasthttp (Hijack), for the
// HTTP server (httpapi) and the A2A binding it mounts (a2a/a2ahttp): the
// buffered writer whose write deadline each flush renews (Writer), the raw
// status line and headers (Header), the follow loop with keep-alive
// comments (Follow) and where a client resumes (Resume: the one
// Last-Event-ID helper).
package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

const (
	// writeTimeout bounds each write of a taken-over connection, so a
	// client that stops reading cannot hold a stream forever.
	writeTimeout = 30 * time.Second
	// KeepAlive is how often an idle stream sends a comment line, which
	// also finds clients that went away.
	KeepAlive = 15 * time.Second
)

// Writer is a buffered writer on a taken-over connection that renews the
// write deadline on every flush (and on a write that flushes).
type Writer struct {
	c   net.Conn
	bw  *bufio.Writer
	buf []byte // Event's
}

// NewWriter returns a Writer on c with an 8 KiB buffer.
func NewWriter(c net.Conn) *Writer {
	return &Writer{c: c, bw: bufio.NewWriterSize(c, 8<<10)}
}

func (w *Writer) Write(p []byte) (int, error) {
	if w.bw.Available() < len(p) {
		_ = w.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	return w.bw.Write(p)
}

// WriteString writes s.
func (w *Writer) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Event writes one event (AppendEvent).
func (w *Writer) Event(id, name string, data []byte) error {
	w.buf = AppendEvent(w.buf[:0], id, name, data)
	_, err := w.Write(w.buf)
	return err
}

// AppendEvent appends one event of the stream format (the HTML
// standard's server-sent events): an "id:" line when id is not empty, an
// "event:" line when name is not empty, one "data:" line per line of data
// (split at LF, CRLF or CR, so that a newline in data cannot end the
// event or start a field), and the empty line that dispatches it.
func AppendEvent(dst []byte, id, name string, data []byte) []byte {
	if id != "" {
		dst = append(append(append(dst, "id: "...), id...), '\n')
	}
	if name != "" {
		dst = append(append(append(dst, "event: "...), name...), '\n')
	}
	for {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			break
		}
		dst = append(append(append(dst, "data: "...), data[:i]...), '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	dst = append(append(append(dst, "data: "...), data...), '\n')
	return append(dst, '\n')
}

// Flush sends what is buffered.
func (w *Writer) Flush() error {
	_ = w.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	return w.bw.Flush()
}

// Header is the status line and headers of an answer written on a
// taken-over connection (closed after it), with the blank line that ends
// them; extra are more "Name: value" lines.
func Header(status int, contentType string, extra ...string) string {
	h := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nServer: synapse\r\nConnection: close\r\n", status, fasthttp.StatusMessage(status), contentType)
	for _, e := range extra {
		h += e + "\r\n"
	}
	return h + "\r\n"
}

// Follow writes the items of c as they come, with a keep-alive comment
// every KeepAlive (which also finds clients that went away), until emit
// says the stream is over, the server shuts down (done), or c is closed;
// then lagged tells whether the reader fell behind (the caller reloads
// from where it was) or the source ended.
func Follow[T any](w *Writer, done <-chan struct{}, c <-chan T, lagged func() bool, emit func(T) (end bool, err error)) (bool, error) {
	keep := time.NewTicker(KeepAlive)
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

// Resume is where a client resumes an SSE stream: after the event id in
// its Last-Event-ID header or, when fromQuery is set, in the last_event_id
// query parameter (a browser's EventSource cannot set the header on its
// first connection). ok is false when the client named none; an id that
// is not a whole number is invalid_params.
func Resume(ctx *fasthttp.RequestCtx, fromQuery bool) (last uint64, ok bool, err error) {
	raw := ctx.Request.Header.Peek("Last-Event-ID")
	if len(raw) == 0 && fromQuery {
		raw = ctx.QueryArgs().Peek("last_event_id")
	}
	if len(raw) == 0 {
		return 0, false, nil
	}
	n, perr := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64)
	if perr != nil {
		return 0, false, wire.Errorf(wire.CodeInvalidParams, "Last-Event-ID must be an event id (a whole number)").With("field", "Last-Event-ID")
	}
	return n, true, nil
}
