package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// The task path encodes a task, its events and its status answer once per
// change. encoding/json spends most of that time in reflection and in
// re-scanning what the types' MarshalJSON methods return (every Time, every
// JSONValue); the appenders below write the same bytes directly. Each is
// byte for byte what json.Marshal (html true) or the JSON codec (html
// false) writes for the same value (task_json_test.go compares them), so
// records and answers do not change. The rare nested fields (origin, human,
// missing fields) go through encoding/json.

// AppendTaskJSON appends the JSON of t to b.
func AppendTaskJSON(b []byte, t *Task, html bool) ([]byte, error) {
	b = append(b, `{"task_id":`...)
	b = appendString(b, t.ID, html)
	b = append(b, `,"task_type":`...)
	b = appendString(b, t.Type, html)
	b = append(b, `,"status":`...)
	b = appendString(b, string(t.Status), html)
	b = append(b, `,"progress":`...)
	b = strconv.AppendInt(b, int64(t.Progress), 10)
	var err error
	if len(t.Payload) > 0 {
		b = append(b, `,"payload":`...)
		if b, err = appendRaw(b, t.Payload, html); err != nil {
			return nil, err
		}
	}
	if len(t.Result) > 0 {
		b = append(b, `,"result":`...)
		if b, err = appendRaw(b, t.Result, html); err != nil {
			return nil, err
		}
	}
	if t.ErrorCode != "" {
		b = append(b, `,"error_code":`...)
		b = appendString(b, string(t.ErrorCode), html)
	}
	if t.ErrorMessage != "" {
		b = append(b, `,"error_message":`...)
		b = appendString(b, t.ErrorMessage, html)
	}
	if t.Recoverable {
		b = append(b, `,"recoverable":true`...)
	}
	if t.CallbackURL != "" {
		b = append(b, `,"callback_url":`...)
		b = appendString(b, t.CallbackURL, html)
	}
	if t.TTLSeconds != 0 {
		b = append(b, `,"ttl_seconds":`...)
		b = strconv.AppendInt(b, int64(t.TTLSeconds), 10)
	}
	if t.Priority != "" {
		b = append(b, `,"priority":`...)
		b = appendString(b, t.Priority, html)
	}
	if t.Target != "" {
		b = append(b, `,"target":`...)
		b = appendString(b, t.Target, html)
	}
	if t.Origin != nil {
		b = append(b, `,"origin":`...)
		b = AppendOriginJSON(b, t.Origin, html)
	}
	if t.CancelRequested {
		b = append(b, `,"cancel_requested":true`...)
	}
	if t.Human != nil {
		b = append(b, `,"human":`...)
		if b, err = appendAny(b, t.Human, html); err != nil {
			return nil, err
		}
	}
	if t.Owner != "" {
		b = append(b, `,"owner":`...)
		b = appendString(b, t.Owner, html)
	}
	if len(t.MissingFields) > 0 {
		b = append(b, `,"missing_fields":`...)
		if b, err = appendAny(b, t.MissingFields, html); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"created_at":`...)
	if b, err = appendStdTime(b, t.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"updated_at":`...)
	if b, err = appendStdTime(b, t.UpdatedAt); err != nil {
		return nil, err
	}
	if !t.StartedAt.IsZero() {
		b = append(b, `,"started_at":`...)
		if b, err = appendStdTime(b, t.StartedAt); err != nil {
			return nil, err
		}
	}
	if !t.Deadline.IsZero() {
		b = append(b, `,"deadline":`...)
		if b, err = appendStdTime(b, t.Deadline); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, t.Seq, 10)
	b = append(b, `,"history":`...)
	if t.History == nil {
		b = append(b, "null"...)
	} else {
		b = appendHistory(b, t.History, html)
	}
	return append(b, '}'), nil
}

// AppendEventJSON appends the JSON of e to b.
func AppendEventJSON(b []byte, e *Event, html bool) ([]byte, error) {
	b = append(b, `{"task_id":`...)
	b = appendString(b, e.TaskID, html)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"event_type":`...)
	b = appendString(b, string(e.Type), html)
	b = append(b, `,"at":`...)
	b = AppendTime(b, e.At.Time)
	b = append(b, `,"data":`...)
	if len(e.Data) == 0 {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = appendRaw(b, e.Data, html); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendStatusJSON appends the JSON of r to b.
func AppendStatusJSON(b []byte, r *TaskStatusResponse, html bool) ([]byte, error) {
	if b == nil {
		b = make([]byte, 0, StatusJSONSize(r))
	}
	b = append(b, `{"task_id":`...)
	b = appendString(b, r.TaskID, html)
	b = append(b, `,"task_type":`...)
	b = appendString(b, r.TaskType, html)
	b = append(b, `,"status":`...)
	b = appendString(b, string(r.Status), html)
	b = append(b, `,"progress":`...)
	b = strconv.AppendInt(b, int64(r.Progress), 10)
	var err error
	if len(r.Payload) > 0 {
		b = append(b, `,"payload":`...)
		if b, err = appendRaw(b, r.Payload, html); err != nil {
			return nil, err
		}
	}
	if r.ResultJSON != nil {
		b = append(b, `,"result_json":`...)
		b = appendString(b, *r.ResultJSON, html)
	}
	if len(r.Result) > 0 {
		b = append(b, `,"result":`...)
		if b, err = appendRaw(b, r.Result, html); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"error_message":`...)
	b = appendString(b, r.ErrorMessage, html)
	if r.ErrorCode != "" {
		b = append(b, `,"error_code":`...)
		b = appendString(b, string(r.ErrorCode), html)
	}
	if r.NumericCode != 0 {
		b = append(b, `,"numeric_code":`...)
		b = strconv.AppendInt(b, int64(r.NumericCode), 10)
	}
	if r.Recoverable {
		b = append(b, `,"recoverable":true`...)
	}
	if len(r.MissingFields) > 0 {
		b = append(b, `,"missing_fields":`...)
		if b, err = appendAny(b, r.MissingFields, html); err != nil {
			return nil, err
		}
	}
	if r.Target != "" {
		b = append(b, `,"target":`...)
		b = appendString(b, r.Target, html)
	}
	if r.Origin != nil {
		b = append(b, `,"origin":`...)
		b = AppendOriginJSON(b, r.Origin, html)
	}
	if r.Human != nil {
		b = append(b, `,"human":`...)
		if b, err = appendAny(b, r.Human, html); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"created_at":`...)
	b = appendString(b, r.CreatedAt, html)
	b = append(b, `,"updated_at":`...)
	b = appendString(b, r.UpdatedAt, html)
	if r.Deadline != "" {
		b = append(b, `,"deadline":`...)
		b = appendString(b, r.Deadline, html)
	}
	b = append(b, `,"etag":`...)
	b = appendString(b, r.ETag, html)
	if len(r.History) > 0 {
		b = append(b, `,"history":`...)
		b = appendHistory(b, r.History, html)
	}
	return append(b, '}'), nil
}

// StatusJSONSize is about the size of r's JSON (a buffer size that avoids
// growing it).
func StatusJSONSize(r *TaskStatusResponse) int {
	n := 320 + 2*len(r.Payload) + 3*len(r.Result) + len(r.ErrorMessage) + len(r.Target) + 90*len(r.History)
	if r.ResultJSON != nil {
		n += 20 + 2*len(*r.ResultJSON)
	}
	if r.Origin != nil {
		n += 40 + len(r.Origin.Peer) + len(r.Origin.MessageID)
	}
	for i := range r.History {
		n += len(r.History[i].Reason)
	}
	return n
}

// AppendTime appends t as a JSON string in TimeFormat (what Time's
// MarshalJSON writes).
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = appendTimeFormat(b, t)
	return append(b, '"')
}

// appendTimeFormat appends t in TimeFormat, as t.UTC().AppendFormat(b,
// TimeFormat) does, without parsing the layout each time.
func appendTimeFormat(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, TimeFormat)
	}
	h, mi, s := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// AppendOriginJSON appends o as encoding/json writes it (its fields in
// order, message_id left out when empty; <, > and & escaped when html is
// set).
func AppendOriginJSON(b []byte, o *TaskOrigin, html bool) []byte {
	b = append(b, `{"peer":`...)
	b = appendString(b, o.Peer, html)
	if o.MessageID != "" {
		b = append(b, `,"message_id":`...)
		b = appendString(b, o.MessageID, html)
	}
	return append(b, '}')
}

func appendHistory(b []byte, h []Transition, html bool) []byte {
	b = append(b, '[')
	for i := range h {
		tr := &h[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if tr.From != "" {
			b = append(b, `"from":`...)
			b = appendString(b, string(tr.From), html)
			b = append(b, ',')
		}
		b = append(b, `"status":`...)
		b = appendString(b, string(tr.Status), html)
		b = append(b, `,"at":`...)
		b = AppendTime(b, tr.At.Time)
		if tr.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendString(b, tr.Reason, html)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendStdTime writes a time.Time as its MarshalJSON does (RFC 3339 with
// nanoseconds, in its own zone).
func appendStdTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, errTimeRange
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

var errTimeRange = errors.New("encode time: year outside of range [0,9999]")

// appendRaw appends an encoded JSON value. The values of a task were
// checked where they came in (a decoded body, a handler's result, an
// encoded event), so a value that is already compact and has nothing to
// escape is copied as it is; any other goes through encoding/json, which
// compacts, escapes and validates it.
func appendRaw(b []byte, v []byte, html bool) ([]byte, error) {
	if plainRaw(v, html) {
		return append(b, v...), nil
	}
	if !html {
		buf := bytes.NewBuffer(b)
		if err := json.Compact(buf, v); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return appendAny(b, JSONValue(v), true)
}

// plainRaw reports whether v has no white space (outside strings or in
// them: the check is cheap and a false "no" only costs the slow path) and
// nothing encoding/json would escape.
func plainRaw(v []byte, html bool) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\n', '\r', 0xe2: // 0xe2 starts U+2028 and U+2029
			return false
		case '<', '>', '&':
			if html {
				return false
			}
		}
	}
	return len(v) > 0
}

func appendAny(b []byte, v any, html bool) ([]byte, error) {
	if html {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return append(b, raw...), nil
	}
	raw, err := JSON.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string, as encoding/json writes it
// (escaping <, > and & when html is set).
func AppendJSONString(b []byte, s string, html bool) []byte { return appendString(b, s, html) }

// AppendCanonicalJSONString appends s as a JSON string escaping only what
// JSON requires (RFC 8785 §3.2.2.2: no HTML escapes, U+2028 and U+2029 as
// they are, invalid UTF-8 bytes as the character U+FFFD, not its escape).
func AppendCanonicalJSONString(b []byte, s string) []byte { return appendJSONString(b, s, false, true) }

// appendString writes s as encoding/json does, escaping <, > and & when
// html is set.
func appendString(b []byte, s string, html bool) []byte { return appendJSONString(b, s, html, false) }

// appendJSONString writes s as a JSON string with control characters, '"'
// and '\\' escaped and <, > and & too when html is set. As encoding/json,
// it escapes U+2028 and U+2029 and writes invalid UTF-8 bytes as the escape
// \ufffd; canonical (RFC 8785) leaves the two separators as they are and
// writes the character U+FFFD.
func appendJSONString(b []byte, s string, html, canonical bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			if canonical {
				b = append(b, "\ufffd"...)
			} else {
				b = append(b, `\ufffd`...)
			}
			i += size
			start = i
			continue
		}
		if !canonical && (r == '\u2028' || r == '\u2029') {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
