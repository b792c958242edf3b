package taskrec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// A task record (the store's bucket tasks), keyed by the task's id, is
// one of:
//
//	'{' ...                                 plain task JSON (schemas 1 to 3)
//	marker  len uint32 BE  task JSON  events JSON array   (schemas 4 to 7;
//	        marker WithEvents or KeptClosed)
//	marker  len uint32 BE  task layout  events layout     (schema 8;
//	        marker Compact or CompactClosed; taskrec.go)
//
// The events kept with a task are its first ones: a task created with
// its events (a sync-mode echo is created final with its five) dirties
// one B+tree instead of two. Later writes add their events to those kept
// while they fit in KeptMax bytes (schema 6); once one does not, the
// marker becomes the closed one and this and every later write's events
// go to the events bucket (JSON). Schema 8 writes the compact layout
// (an echo task with its five events is about 100 bytes beside its
// payload; with 230 bytes of payload its JSON was 3,400) and reads every older record as it is; a
// task the layout cannot hold (ErrUnsupported) is written as JSON, as
// schema 7 did.
const (
	WithEvents    = 0x01
	KeptClosed    = 0x02
	Compact       = 0x03
	CompactClosed = 0x04
	HeaderLen     = 5
	KeptMax       = 4096
)

// Kept reports whether a task record has a marker (events may be kept
// with it); Open, whether later events may still join them.
func Kept(v []byte) bool { return len(v) > 0 && v[0] >= WithEvents && v[0] <= CompactClosed }

func Open(v []byte) bool { return len(v) > 0 && (v[0] == WithEvents || v[0] == Compact) }

func compact(v []byte) bool { return len(v) > 0 && (v[0] == Compact || v[0] == CompactClosed) }

// Closed is a copy of the open record v with its layout's closed marker.
func Closed(v []byte) []byte {
	c := append([]byte(nil), v...)
	c[0]++
	return c
}

// Split returns the task part of a record and the events kept with it
// (nil when there is none).
func Split(v []byte) (task, events []byte, err error) {
	if !Kept(v) {
		return v, nil, nil
	}
	if len(v) < HeaderLen {
		return nil, nil, fmt.Errorf("task record of %d bytes: truncated header", len(v))
	}
	n := binary.BigEndian.Uint32(v[1:HeaderLen])
	if uint64(n) > uint64(len(v)-HeaderLen) {
		return nil, nil, fmt.Errorf("task record of %d bytes declares %d bytes of task", len(v), n)
	}
	end := HeaderLen + int(n)
	return v[HeaderLen:end], v[end:], nil
}

// Decode decodes the task of the record rec of id into t and returns the
// events kept with it, still encoded.
func Decode(id string, rec []byte, t *wire.Task) (kept []byte, err error) {
	raw, kept, err := Split(rec)
	if err != nil {
		return nil, err
	}
	if !compact(rec) {
		*t = wire.Task{}
		return kept, json.Unmarshal(raw, t)
	}
	rest, err := DecodeTask(id, raw, t)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes after the task", len(rest))
	}
	return kept, err
}

// Status is the status of a record's task.
func Status(id string, rec []byte) (wire.Status, error) {
	if compact(rec) {
		var t wire.Task
		_, err := Decode(id, rec, &t)
		return t.Status, err
	}
	raw, _, err := Split(rec)
	if err != nil {
		return "", err
	}
	var t struct {
		Status wire.Status `json:"status"`
	}
	return t.Status, json.Unmarshal(raw, &t)
}

// KeptEvents appends the events kept in the record rec of id with seq >
// after to out, up to limit in out (0: all).
func KeptEvents(id string, rec []byte, after uint64, limit int, out []*wire.Event) ([]*wire.Event, error) {
	var t wire.Task
	kept, err := Decode(id, rec, &t)
	if err != nil || len(kept) == 0 {
		return out, err
	}
	if compact(rec) {
		return DecodeEvents(&t, kept, after, limit, out)
	}
	var group []*wire.Event
	if err := json.Unmarshal(kept, &group); err != nil {
		return out, fmt.Errorf("decode events kept with %q: %w", id, err)
	}
	for _, e := range group {
		if limit > 0 && len(out) >= limit {
			break
		}
		if e == nil {
			return out, fmt.Errorf("decode events kept with %q: null event", id)
		}
		if e.Seq > after {
			out = append(out, e)
		}
	}
	return out, nil
}

// Record is a task's new state and its new events, encoded before the
// write: callers encode in their own goroutines, and the store's single
// writer only copies the bytes into pages (unless events kept with the
// task must be written again with it).
type Record struct {
	Task   *wire.Task
	Events []*wire.Event
	// Grouped: the events are one run of the task's (Grouped), kept
	// with it in buf.
	Grouped bool
	// buf is the record: header, task (to taskEnd), and the events when
	// grouped; compact tells the layout (false: JSON).
	buf     []byte
	taskEnd int
	compact bool
}

// Encode encodes t and evs (events of t). Neither may change until the
// record is written.
func Encode(t *wire.Task, evs []*wire.Event) (*Record, error) {
	r := &Record{Task: t, Events: evs, Grouped: Grouped(evs)}
	size := HeaderLen + 160 + len(t.Payload) + len(t.Result) + 16*len(t.History) + 8*len(evs)
	r.buf = make([]byte, HeaderLen, size)
	var err error
	if r.buf, err = AppendTask(r.buf, t); err == nil {
		r.compact = true
		r.buf[0] = Compact
		r.taskEnd = len(r.buf)
		if r.Grouped {
			if r.buf, err = AppendEvents(r.buf, t, evs); err != nil {
				return nil, fmt.Errorf("encode events of task %s: %w", t.ID, err)
			}
		}
	} else if errors.Is(err, ErrUnsupported) {
		r.buf[0] = WithEvents
		if r.buf, err = wire.AppendTaskJSON(r.buf[:HeaderLen], t, true); err != nil {
			return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
		}
		r.taskEnd = len(r.buf)
		if r.Grouped {
			if r.buf, err = AppendEventsJSON(r.buf, evs); err != nil {
				return nil, err
			}
		}
	} else {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	binary.BigEndian.PutUint32(r.buf[1:HeaderLen], uint32(r.taskEnd-HeaderLen))
	return r, nil
}

// Created is the record of a new task: with its events kept when they
// are grouped, else the task alone (Alone).
func (r *Record) Created() []byte {
	if !r.Grouped {
		return r.Alone()
	}
	return r.buf[:len(r.buf):len(r.buf)]
}

// Alone is the record of the task with no events kept: plain JSON, or
// the compact layout closed.
func (r *Record) Alone() []byte {
	if !r.compact {
		return r.buf[HeaderLen:r.taskEnd:r.taskEnd]
	}
	val := append(make([]byte, 0, r.taskEnd), r.buf[:r.taskEnd]...)
	val[0] = CompactClosed
	return val
}

// With is the open record of the task with evs kept, and the size of
// those events in it.
func (r *Record) With(evs []*wire.Event) (val []byte, evBytes int, err error) {
	val = make([]byte, 0, r.taskEnd+32*len(evs))
	val = append(val, r.buf[:r.taskEnd]...)
	if r.compact {
		val[0] = Compact
		val, err = AppendEvents(val, r.Task, evs)
	} else {
		val[0] = WithEvents
		if len(evs) > 0 {
			val, err = AppendEventsJSON(val, evs)
		}
	}
	return val, len(val) - r.taskEnd, err
}

// AppendEventsJSON appends the JSON array of evs.
func AppendEventsJSON(b []byte, evs []*wire.Event) ([]byte, error) {
	b = append(b, '[')
	for i, e := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = wire.AppendEventJSON(b, e, true); err != nil {
			return nil, fmt.Errorf("encode event %s/%d: %w", e.TaskID, e.Seq, err)
		}
	}
	return append(b, ']'), nil
}

// Grouped reports whether evs go into one record: at least one, all of
// one task, with consecutive sequence numbers.
func Grouped(evs []*wire.Event) bool {
	if len(evs) == 0 {
		return false
	}
	for i, e := range evs[1:] {
		if e.TaskID != evs[0].TaskID || e.Seq != evs[i].Seq+1 {
			return false
		}
	}
	return true
}
