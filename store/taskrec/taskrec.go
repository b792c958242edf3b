package taskrec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/internal/rawjson"
	"github.com/synapse-edge/synapse/wire"
)

// The task, in this order (str: uvarint length and bytes; bytes: the
// same; st: a status, one byte, 1 + its index in wire.AllStatuses, or 0
// and a str; t: a time, varint seconds since 1970 and uvarint
// nanoseconds; dt: a time as varint seconds after created_at and uvarint
// nanoseconds):
//
//	flags          uvarint, the bits below
//	task_type      str
//	status         st
//	progress       varint
//	payload        bytes (empty: none)
//	result         bytes, absent with fResultIsPayload
//	error_code     str
//	error_message  str
//	callback_url   str
//	ttl_seconds    varint
//	priority       str
//	target         str
//	owner          str
//	extras         bytes, with fExtras: the JSON object of origin, human
//	               and missing_fields (encoding/json, as in the JSON record)
//	created_at     t
//	updated_at     dt
//	started_at     dt, with fStarted
//	deadline       dt, with fDeadline
//	seq            uvarint
//	history        uvarint count, absent with fHistoryNil; each entry:
//	               from st, status st, at (varint ms after created_at's
//	               ms), reason (uvarint n: n < 3 names "", "submitted",
//	               "accepted"; else n-3 bytes follow)
//
// The id is the record's key. Payload, result and raw event data are
// kept as the JSON record keeps them (compact, with <, > and & escaped).
const (
	fResultIsPayload = 1 << iota
	fRecoverable
	fCancelRequested
	fExtras
	fStarted
	fDeadline
	fHistoryNil
	fMax = fHistoryNil<<1 - 1
)

// ErrUnsupported is a task this layout cannot hold exactly (a time
// outside UTC or outside the years 0 to 9999, a string that is not
// UTF-8): the store writes it as JSON.
var ErrUnsupported = errors.New("taskrec: task not representable")

// errCorrupt is a record that does not decode.
var errCorrupt = errors.New("malformed compact task record")

func corrupt(what string) error { return fmt.Errorf("%w: %s", errCorrupt, what) }

var reasons = [...]string{"", "submitted", "accepted"}

// extras are the task's rarely set nested fields, as their JSON.
type extras struct {
	Origin        *wire.TaskOrigin           `json:"origin,omitempty"`
	Human         *wire.TaskNeedHumanPayload `json:"human,omitempty"`
	MissingFields []wire.MissingField        `json:"missing_fields,omitempty"`
}

// appendExtras appends the JSON of x as encoding/json writes it; the
// extras of a delegated task, its origin alone, without its reflection.
func appendExtras(b []byte, x extras) ([]byte, error) {
	if x.Origin == nil || x.Human != nil || len(x.MissingFields) > 0 {
		raw, err := json.Marshal(x)
		return append(b, raw...), err
	}
	b = wire.AppendOriginJSON(append(b, `{"origin":`...), x.Origin, true)
	return append(b, '}'), nil
}

// AppendTask appends the compact layout of t (its id left out) to dst;
// ErrUnsupported (or an error of its JSON values) when it cannot.
func AppendTask(dst []byte, t *wire.Task) ([]byte, error) {
	if !utf8.ValidString(t.Type) || !utf8.ValidString(string(t.Status)) || !utf8.ValidString(string(t.ErrorCode)) ||
		!utf8.ValidString(t.ErrorMessage) || !utf8.ValidString(t.CallbackURL) || !utf8.ValidString(t.Priority) ||
		!utf8.ValidString(t.Target) || !utf8.ValidString(t.Owner) || !utf8.ValidString(t.ID) {
		return dst, ErrUnsupported
	}
	for _, tm := range [...]time.Time{t.CreatedAt, t.UpdatedAt, t.StartedAt, t.Deadline} {
		if !plainTime(tm) {
			return dst, ErrUnsupported
		}
	}
	for i := range t.History {
		h := &t.History[i]
		if y := h.At.UTC().Year(); y < 0 || y > 9999 {
			return dst, ErrUnsupported
		}
		if !utf8.ValidString(string(h.From)) || !utf8.ValidString(string(h.Status)) || !utf8.ValidString(h.Reason) {
			return dst, ErrUnsupported
		}
	}
	payload, err := normal(t.Payload)
	if err != nil {
		return dst, err
	}
	result, err := normal(t.Result)
	if err != nil {
		return dst, err
	}
	var flags uint64
	if len(result) > 0 && bytes.Equal(payload, result) {
		flags |= fResultIsPayload
	}
	if t.Recoverable {
		flags |= fRecoverable
	}
	if t.CancelRequested {
		flags |= fCancelRequested
	}
	var ext []byte
	if t.Origin != nil || t.Human != nil || len(t.MissingFields) > 0 {
		flags |= fExtras
		if ext, err = appendExtras(nil, extras{t.Origin, t.Human, t.MissingFields}); err != nil {
			return dst, err
		}
	}
	if !t.StartedAt.IsZero() {
		flags |= fStarted
	}
	if !t.Deadline.IsZero() {
		flags |= fDeadline
	}
	if t.History == nil {
		flags |= fHistoryNil
	}
	b := binary.AppendUvarint(dst, flags)
	b = appendStr(b, t.Type)
	b = appendStatus(b, t.Status)
	b = binary.AppendVarint(b, int64(t.Progress))
	b = appendBytes(b, payload)
	if flags&fResultIsPayload == 0 {
		b = appendBytes(b, result)
	}
	b = appendStr(b, string(t.ErrorCode))
	b = appendStr(b, t.ErrorMessage)
	b = appendStr(b, t.CallbackURL)
	b = binary.AppendVarint(b, int64(t.TTLSeconds))
	b = appendStr(b, t.Priority)
	b = appendStr(b, t.Target)
	b = appendStr(b, t.Owner)
	if flags&fExtras != 0 {
		b = appendBytes(b, ext)
	}
	cs := t.CreatedAt.Unix()
	b = binary.AppendVarint(b, cs)
	b = binary.AppendUvarint(b, uint64(t.CreatedAt.Nanosecond()))
	b = appendDelta(b, cs, t.UpdatedAt)
	if flags&fStarted != 0 {
		b = appendDelta(b, cs, t.StartedAt)
	}
	if flags&fDeadline != 0 {
		b = appendDelta(b, cs, t.Deadline)
	}
	b = binary.AppendUvarint(b, t.Seq)
	if t.History != nil {
		cms := t.CreatedAt.UnixMilli()
		b = binary.AppendUvarint(b, uint64(len(t.History)))
		for i := range t.History {
			h := &t.History[i]
			b = appendStatus(b, h.From)
			b = appendStatus(b, h.Status)
			b = binary.AppendVarint(b, h.At.UnixMilli()-cms)
			b = appendReason(b, h.Reason)
		}
	}
	return b, nil
}

// plainTime reports whether the JSON record's RFC 3339 text of tm reads
// back as the UTC time the layout gives.
func plainTime(tm time.Time) bool {
	if _, off := tm.Zone(); off != 0 {
		return false
	}
	y := tm.Year()
	return y >= 0 && y <= 9999
}

func appendDelta(b []byte, base int64, tm time.Time) []byte {
	b = binary.AppendVarint(b, tm.Unix()-base)
	return binary.AppendUvarint(b, uint64(tm.Nanosecond()))
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStatus(b []byte, s wire.Status) []byte {
	for i, v := range wire.AllStatuses {
		if v == s {
			return append(b, byte(i+1))
		}
	}
	return appendStr(append(b, 0), string(s))
}

func appendReason(b []byte, r string) []byte {
	for i, v := range reasons {
		if v == r {
			return binary.AppendUvarint(b, uint64(i))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r)+len(reasons)))
	return append(b, r...)
}

// normal is a JSON value as the JSON record holds it: compact, with <, >
// and & escaped (what encoding/json makes of it).
func normal(v wire.JSONValue) ([]byte, error) {
	if len(v) == 0 || rawjson.AsIs(v) {
		return v, nil
	}
	return json.Marshal(json.RawMessage(v))
}

// reader decodes the layout; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = corrupt(what)
	}
	r.b = nil
}

func (r *reader) uvarint(what string) uint64 {
	n, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[w:]
	return n
}

func (r *reader) varint(what string) int64 {
	n, w := binary.Varint(r.b)
	if w <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[w:]
	return n
}

func (r *reader) int(what string) int {
	n := r.varint(what)
	if int64(int(n)) != n {
		r.fail(what)
		return 0
	}
	return int(n)
}

func (r *reader) bytes(what string) []byte {
	n := r.uvarint(what)
	if n > uint64(len(r.b)) {
		r.fail(what)
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) str(what string) string { return string(r.bytes(what)) }

func (r *reader) byte1(what string) byte {
	if len(r.b) == 0 {
		r.fail(what)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) status(what string) wire.Status {
	c := r.byte1(what)
	switch {
	case c == 0:
		return wire.Status(r.str(what))
	case int(c) <= len(wire.AllStatuses):
		return wire.AllStatuses[c-1]
	}
	r.fail(what)
	return ""
}

func (r *reader) reason() string {
	n := r.uvarint("history reason")
	if n < uint64(len(reasons)) {
		return reasons[n]
	}
	n -= uint64(len(reasons))
	if n > uint64(len(r.b)) {
		r.fail("history reason")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// nanos reads nanoseconds of a second.
func (r *reader) nanos(what string) int64 {
	n := r.uvarint(what)
	if n >= 1e9 {
		r.fail(what)
		return 0
	}
	return int64(n)
}

func (r *reader) delta(base int64, what string) time.Time {
	s := r.varint(what)
	ns := r.nanos(what)
	return time.Unix(base+s, ns).UTC()
}

// jsonValue is a stored JSON value as the JSON record decodes it: the
// JSON null is no value.
func jsonValue(b []byte) wire.JSONValue {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return wire.JSONValue(bytes.Clone(b))
}

// DecodeTask decodes the task of the layout at the start of b (its id
// is id) into t and returns the bytes after it.
func DecodeTask(id string, b []byte, t *wire.Task) (rest []byte, err error) {
	r := &reader{b: b}
	flags := r.uvarint("flags")
	if flags&^fMax != 0 {
		return nil, corrupt("flags")
	}
	*t = wire.Task{ID: id}
	t.Type = r.str("task_type")
	t.Status = r.status("status")
	t.Progress = r.int("progress")
	payload := r.bytes("payload")
	t.Payload = jsonValue(payload)
	if flags&fResultIsPayload != 0 {
		t.Result = jsonValue(payload)
	} else {
		t.Result = jsonValue(r.bytes("result"))
	}
	t.ErrorCode = wire.ErrorCode(r.str("error_code"))
	t.ErrorMessage = r.str("error_message")
	t.Recoverable = flags&fRecoverable != 0
	t.CallbackURL = r.str("callback_url")
	t.TTLSeconds = r.int("ttl_seconds")
	t.Priority = r.str("priority")
	t.Target = r.str("target")
	t.Owner = r.str("owner")
	t.CancelRequested = flags&fCancelRequested != 0
	if flags&fExtras != 0 {
		ext := r.bytes("extras")
		if r.err == nil {
			var x extras
			if err := json.Unmarshal(ext, &x); err != nil {
				return nil, corrupt("extras: " + err.Error())
			}
			t.Origin, t.Human, t.MissingFields = x.Origin, x.Human, x.MissingFields
		}
	}
	cs := r.varint("created_at")
	t.CreatedAt = time.Unix(cs, r.nanos("created_at")).UTC()
	t.UpdatedAt = r.delta(cs, "updated_at")
	if flags&fStarted != 0 {
		t.StartedAt = r.delta(cs, "started_at")
	}
	if flags&fDeadline != 0 {
		t.Deadline = r.delta(cs, "deadline")
	}
	t.Seq = r.uvarint("seq")
	if flags&fHistoryNil == 0 {
		n := r.uvarint("history")
		if n > uint64(len(r.b))/3 { // an entry is at least 3 bytes
			return nil, corrupt("history length")
		}
		t.History = make([]wire.Transition, n)
		cms := t.CreatedAt.UnixMilli()
		for i := range t.History {
			h := &t.History[i]
			h.From = r.status("history from")
			h.Status = r.status("history status")
			h.At = wire.Time{Time: time.UnixMilli(cms + r.varint("history at")).UTC()}
			h.Reason = r.reason()
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.b, nil
}

// Events. The events kept with a task follow its layout, each:
//
//	seq    uvarint, after the previous event's (the first's after 0)
//	kind   1 byte, below
//	at     varint ms after the task's created_at ms
//	evStatus:   history index uvarint, progress varint: a
//	            status_update of that transition (wire.StatusEventData)
//	evError:    nothing: the error event of the task's error
//	evComplete: nothing: the complete event of the task as it is
//	evRaw:      event type str, data bytes
//
// An event is written derived only when deriving it gives its data byte
// for byte; the task it is derived from is the one in the same record,
// so a store that writes a new state of the task writes its events
// again (AppendEvents with the events decoded from the old record).
const (
	evStatus byte = 1 + iota
	evError
	evComplete
	evRaw
)

// AppendEvents appends the events evs of t (t as it is written in the
// same record) to dst.
func AppendEvents(dst []byte, t *wire.Task, evs []*wire.Event) ([]byte, error) {
	cms := t.CreatedAt.UnixMilli()
	var prev uint64
	hi := 0 // the history entry the next status event most likely is
	var scratch []byte
	for _, e := range evs {
		if e.Seq <= prev && prev != 0 || e.Seq == 0 {
			return dst, fmt.Errorf("taskrec: event %d after %d", e.Seq, prev)
		}
		data, err := normal(e.Data)
		if err != nil {
			return dst, err
		}
		if len(data) == 0 {
			data = []byte("null")
		}
		dst = binary.AppendUvarint(dst, e.Seq-prev)
		prev = e.Seq
		at := binary.AppendVarint(nil, e.At.UnixMilli()-cms)
		switch e.Type {
		case wire.EventStatus:
			if p, ok := progressOf(data); ok {
				if i, ok := matchHistory(t, data, p, hi, &scratch); ok {
					hi = i + 1
					dst = append(append(dst, evStatus), at...)
					dst = binary.AppendUvarint(dst, uint64(i))
					dst = binary.AppendVarint(dst, int64(p))
					continue
				}
			}
		case wire.EventError:
			if t.ErrorCode != "" && bytes.Equal(errorData(t), data) {
				dst = append(append(dst, evError), at...)
				continue
			}
		case wire.EventComplete:
			if c, err := completeData(t, e.Seq); err == nil && bytes.Equal(c, data) {
				dst = append(append(dst, evComplete), at...)
				continue
			}
		}
		if !utf8.ValidString(string(e.Type)) {
			return dst, ErrUnsupported
		}
		dst = append(append(dst, evRaw), at...)
		dst = appendStr(dst, string(e.Type))
		dst = appendStr(dst, string(data))
	}
	return dst, nil
}

// progressOf reads the progress of a status event's data.
func progressOf(data []byte) (int, bool) {
	const key = `,"progress":`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return 0, false
	}
	p, err := strconv.Atoi(string(rest[:j]))
	return p, err == nil
}

// matchHistory finds the transition of t whose status event with
// progress p is data, trying from first on.
func matchHistory(t *wire.Task, data []byte, p, first int, scratch *[]byte) (int, bool) {
	n := len(t.History)
	if *scratch == nil {
		*scratch = make([]byte, 0, len(data)) // what matches is as long
	}
	for k := range n {
		i := (first + k) % n
		h := &t.History[i]
		*scratch = wire.AppendStatusEventJSON((*scratch)[:0], &wire.StatusEventData{From: h.From, Message: h.Reason, Progress: p, Status: h.Status, TaskID: t.ID})
		if bytes.Equal(*scratch, data) {
			return i, true
		}
	}
	return 0, false
}

func errorData(t *wire.Task) []byte {
	return wire.ErrorEventJSON(&wire.ErrorEventData{Code: t.ErrorCode, Message: t.ErrorMessage,
		NumericCode: wire.NumericCode(t.ErrorCode), Recoverable: t.Recoverable, TaskID: t.ID})
}

// completeData is the data of t's complete event of sequence seq: the
// task's full status answer with the etag of seq (agent/engine.go).
func completeData(t *wire.Task, seq uint64) ([]byte, error) {
	final := t.StatusResponse(true)
	final.ETag = `"` + t.ID + "-" + strconv.FormatUint(seq, 10) + `"`
	return wire.AppendStatusJSON(nil, final, true)
}

// DecodeEvents decodes the events b holds (those kept with t, after its
// layout) and appends those with seq > after to out, up to limit events
// in out (0: all).
func DecodeEvents(t *wire.Task, b []byte, after uint64, limit int, out []*wire.Event) ([]*wire.Event, error) {
	r := &reader{b: b}
	cms := t.CreatedAt.UnixMilli()
	var seq uint64
	for len(r.b) > 0 && (limit <= 0 || len(out) < limit) {
		d := r.uvarint("event seq")
		if d == 0 && r.err == nil {
			r.fail("event seq")
		}
		seq += d
		kind := r.byte1("event kind")
		at := time.UnixMilli(cms + r.varint("event at")).UTC()
		e := &wire.Event{TaskID: t.ID, Seq: seq, At: wire.Time{Time: at}}
		switch kind {
		case evStatus:
			i := r.uvarint("event history index")
			p := r.int("event progress")
			if r.err != nil {
				break
			}
			if i >= uint64(len(t.History)) {
				return out, corrupt("event history index")
			}
			h := &t.History[i]
			e.Type = wire.EventStatus
			e.Data = wire.StatusEventJSON(&wire.StatusEventData{From: h.From, Message: h.Reason, Progress: p, Status: h.Status, TaskID: t.ID})
		case evError:
			e.Type, e.Data = wire.EventError, errorData(t)
		case evComplete:
			data, err := completeData(t, seq)
			if err != nil {
				return out, fmt.Errorf("complete event %d: %w", seq, err)
			}
			e.Type, e.Data = wire.EventComplete, data
		case evRaw:
			e.Type = wire.EventType(r.str("event type"))
			e.Data = jsonValue(r.bytes("event data"))
		default:
			r.fail("event kind")
		}
		if r.err != nil {
			return out, r.err
		}
		if seq > after {
			out = append(out, e)
		}
	}
	return out, r.err
}
