package outbox

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/internal/rawjson"
	"github.com/synapse-edge/synapse/wire"
)

// appendItem appends it as json.Marshal writes it, byte for byte (the
// form the fast path below reads), without encoding/json's reflection
// and without compacting again a payload that is compact already: the
// envelope an item carries is most of its bytes, and compacting it was
// most of the cost of a Put.
func appendItem(b []byte, it *Item) ([]byte, error) {
	if b == nil { // room for it all, so that b never grows
		b = make([]byte, 0, 400+len(it.Payload)+len(it.ID)+len(it.Peer)+len(it.URL)+len(it.Type)+len(it.CorrelationID)+len(it.LastError))
	}
	b = appendItemString(b, `{"id":`, it.ID, false)
	b = strconv.AppendUint(append(b, `,"seq":`...), it.Seq, 10)
	b = appendItemString(b, `,"peer":`, it.Peer, true)
	b = appendItemString(b, `,"url":`, it.URL, true)
	b = appendItemString(b, `,"type":`, it.Type, false)
	b = appendItemString(b, `,"correlation_id":`, it.CorrelationID, true)
	b = append(b, `,"payload":`...)
	var err error
	switch p := it.Payload; {
	case p == nil:
		b = append(b, "null"...)
	case len(p) > 0 && rawjson.AsIs(p) && json.Valid(p):
		b = append(b, p...)
	default: // encoding/json's compacting and escaping, or its error
		var raw []byte
		if raw, err = json.Marshal(p); err != nil {
			return nil, err
		}
		b = append(b, raw...)
	}
	if b, err = appendItemTime(b, `,"created_at":"`, it.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(it.Attempts), 10)
	if b, err = appendItemTime(b, `,"next_attempt_at":"`, it.NextAttempt); err != nil {
		return nil, err
	}
	b = appendItemString(b, `,"last_error":`, it.LastError, true)
	if !it.DeadAt.IsZero() {
		if b, err = appendItemTime(b, `,"dead_at":"`, it.DeadAt); err != nil {
			return nil, err
		}
	}
	if it.Unreachable {
		b = append(b, `,"unreachable":true`...)
	}
	return append(b, '}'), nil
}

// appendItemString appends key and s as encoding/json writes it, nothing
// for an empty s with omitEmpty.
func appendItemString(b []byte, key, s string, omitEmpty bool) []byte {
	if omitEmpty && s == "" {
		return b
	}
	return wire.AppendJSONString(append(b, key...), s, true)
}

// appendItemTime appends key (up to the value's opening quote) and t as
// its MarshalJSON writes it (RFC 3339 with nanoseconds, in its own zone),
// or fails where it fails.
func appendItemTime(b []byte, key string, t time.Time) ([]byte, error) {
	b, err := t.AppendText(append(b, key...))
	if err != nil {
		return nil, err
	}
	return append(b, '"'), nil
}

// UnmarshalJSON reads an item. Every lane round decodes the items at the
// head of its queue, and encoding/json's reflection was most of the cost
// of a round to a peer, so the form Put writes (encoding/json's own
// output: no white space, the fields by their names, strings without
// escapes) is read here directly; anything else (white space, escapes,
// a key in other case, an unknown field, a null, an error) is read by
// encoding/json, so what an item decodes to, or the error, is
// encoding/json's either way (FuzzItemJSON holds the two to that).
func (it *Item) UnmarshalJSON(b []byte) error {
	var fast Item
	if decodeItem(b, &fast) {
		*it = fast
		return nil
	}
	type plain Item // the same fields without this method
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*it = Item(p)
	return nil
}

// decodeItem reads b into it when b is in the form Put writes; false when
// it is not (it is then partly set).
func decodeItem(b []byte, it *Item) bool {
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	i := 1
	if b[i] == '}' {
		return i+1 == len(b)
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok || next >= len(b) || b[next] != ':' {
			return false
		}
		i = next + 1
		if i >= len(b) {
			return false
		}
		if i, ok = decodeField(b, i, key, it); !ok || i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i+1 == len(b)
		default:
			return false
		}
	}
}

// decodeField reads the value at b[i:] into the field named key and
// returns where the value ends.
func decodeField(b []byte, i int, key []byte, it *Item) (int, bool) {
	var s *string
	switch string(key) {
	case "id":
		s = &it.ID
	case "peer":
		s = &it.Peer
	case "url":
		s = &it.URL
	case "type":
		s = &it.Type
	case "correlation_id":
		s = &it.CorrelationID
	case "last_error":
		s = &it.LastError
	case "seq":
		end := digits(b, i)
		n, err := strconv.ParseUint(string(b[i:end]), 10, 64)
		it.Seq = n
		return end, err == nil && end > i
	case "attempts":
		start := i
		if i < len(b) && b[i] == '-' {
			i++
		}
		end := digits(b, i)
		n, err := strconv.ParseInt(string(b[start:end]), 10, 0)
		it.Attempts = int(n)
		return end, err == nil && end > i
	case "unreachable":
		switch {
		case hasAt(b, i, "true"):
			it.Unreachable = true
			return i + 4, true
		case hasAt(b, i, "false"):
			it.Unreachable = false
			return i + 5, true
		}
		return i, false
	case "created_at", "next_attempt_at", "dead_at":
		_, end, ok := plainString(b, i)
		if !ok {
			return i, false
		}
		t := &it.CreatedAt
		switch string(key) {
		case "next_attempt_at":
			t = &it.NextAttempt
		case "dead_at":
			t = &it.DeadAt
		}
		return end, t.UnmarshalJSON(b[i:end]) == nil
	case "payload":
		end, ok := valueEnd(b, i)
		if !ok || !json.Valid(b[i:end]) {
			return i, false
		}
		it.Payload = append(json.RawMessage(nil), b[i:end]...)
		return end, true
	default:
		return i, false
	}
	if v, end, ok := plainString(b, i); ok {
		*s = string(v)
		return end, true
	}
	// A string with escapes (json.Marshal writes & < > as \u0026 ...,
	// as in a callback URL's query) is encoding/json's to read.
	end, ok := valueEnd(b, i)
	if !ok || b[i] != '"' {
		return i, false
	}
	return end, json.Unmarshal(b[i:end], s) == nil
}

// plainString is the string at b[i:] when it has no escape and no control
// character and is valid UTF-8 (what encoding/json reads as it is), and
// where it ends.
func plainString(b []byte, i int) (s []byte, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, j, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, len(b), false
}

// digits is where the run of decimal digits at b[i:] ends.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func hasAt(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// valueEnd is where the JSON value at b[i:] ends, for a value the caller
// then checks with json.Valid: a string at its closing quote, an object or
// array at its closing bracket (strings inside followed, escapes and all),
// anything else at the first ',' or '}'.
func valueEnd(b []byte, i int) (int, bool) {
	str := func(j int) int { // j at an opening quote: the index of its closing one
		for j++; j < len(b) && b[j] != '"'; j++ {
			if b[j] == '\\' {
				j++
			}
		}
		return j
	}
	switch b[i] {
	case '"':
		j := str(i)
		return j + 1, j < len(b)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = str(j)
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(b), false
	}
	for j := i; j < len(b); j++ {
		if b[j] == ',' || b[j] == '}' {
			return j, j > i
		}
	}
	return len(b), false
}
