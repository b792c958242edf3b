// Package eventstream reads server-sent events (text/event-stream): the
// task streams of the REST API (package client) and the A2A task
// subscriptions (transport/a2aclient). It imports nothing of the module.
package eventstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Server-sent events (text/event-stream), as the agent writes them on
// GET /task/{id}/stream:
//
//	event: progress
//	id: 7
//	data: {"progress":50}
//	<blank line>
//
// Lines end with LF, CRLF or CR. A line starting with ':' is a comment
// (keep-alive). A field name is followed by ':' and one optional space.
// "data" lines of one event are joined with LF; a blank line dispatches
// the event; a block without data lines dispatches nothing. "id" sets the
// last event id, which takes effect when the block ends (even one without
// data) and is kept across events; an id containing NUL is ignored.
// "retry" sets the reconnection delay in milliseconds. An event not ended
// by a blank line before the stream ends is dropped. Other fields are
// ignored.

// Limits of the event reader.
const (
	// MaxLine is the longest line the reader accepts.
	MaxLine = 1 << 20
	// MaxData is the most data one event may carry.
	MaxData = 4 << 20
)

// ErrTooLarge is returned when a server-sent line or event exceeds the
// reader's limit.
var ErrTooLarge = errors.New("client: server-sent event too large")

// Event is one server-sent event.
type Event struct {
	// Type is the event: field (for a task stream: status_update,
	// progress, log, error, complete); "message" when the event has none.
	Type string
	// ID is the last event id seen on the stream when this event ended,
	// the value to resume from with Last-Event-ID.
	ID string
	// Data is the data: lines joined with "\n"; a JSON object for task events.
	Data []byte
}

// Decode unmarshals the event's data as JSON into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("decode %s event %q: %w", e.Type, e.ID, err)
	}
	return nil
}

// Reader reads server-sent events from a byte stream.
type Reader struct {
	sc      *bufio.Scanner
	first   bool
	evType  string
	data    []byte
	hasData bool
	idBuf   string // id: of the event being read
	lastID  string // id of the last ended block
	retry   time.Duration
}

// NewReader returns a reader of the events in r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	sc.Split(scanEventLines)
	return &Reader{sc: sc, first: true}
}

// LastEventID returns the id to resume after: the last id: field of a
// block that a blank line ended (an id in a half-read event does not count).
func (r *Reader) LastEventID() string { return r.lastID }

// Retry returns the last retry: delay read so far, or 0.
func (r *Reader) Retry() time.Duration { return r.retry }

// Next returns the next complete event. At the end of the stream it returns
// io.EOF; a line longer than MaxLine or data over MaxData gives an
// error wrapping ErrTooLarge.
func (r *Reader) Next() (Event, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if r.first {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
			r.first = false
		}
		if len(line) == 0 {
			r.lastID = r.idBuf
			if !r.hasData {
				r.evType = ""
				continue
			}
			ev := Event{Type: r.evType, ID: r.lastID, Data: bytes.Clone(r.data[:len(r.data)-1])}
			if ev.Type == "" {
				ev.Type = "message"
			}
			r.evType, r.data, r.hasData = "", r.data[:0], false
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			r.evType = string(value)
		case "data":
			if len(r.data)+len(value)+1 > MaxData {
				return Event{}, fmt.Errorf("read event: data over %d bytes: %w", MaxData, ErrTooLarge)
			}
			r.data = append(append(r.data, value...), '\n')
			r.hasData = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.idBuf = string(value)
			}
		case "retry":
			if ms, ok := parseDigits(value); ok {
				r.retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Event{}, fmt.Errorf("read event: line over %d bytes: %w", MaxLine, ErrTooLarge)
		}
		return Event{}, fmt.Errorf("read event: %w", err)
	}
	return Event{}, io.EOF
}

// parseDigits parses a non-empty ASCII decimal number of at most 9 digits.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// scanEventLines is a bufio.SplitFunc for lines ending in LF, CRLF or CR.
func scanEventLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\n' {
			return i + 1, data[:i], nil
		}
		if i+1 < len(data) {
			if data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			return i + 1, data[:i], nil
		}
		if atEOF {
			return i + 1, data[:i], nil
		}
		return 0, nil, nil // a CR at the end: wait to see whether LF follows
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}
