// Package batch is the wire form of batches of envelopes between peers
// (see package peer, p2p_batch.go): the body of a batch, its answer, and
// their codecs. This agent writes both by hand, the envelopes and bodies
// byte for byte, and reads what it writes in place; anything else is read
// by encoding/json.
package batch

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/wire"
)

// Item is one envelope of a batch.
type Item struct {
	Seq      uint64          `json:"seq"`
	Prev     uint64          `json:"prev,omitempty"`
	Envelope json.RawMessage `json:"envelope"`
}

// Request is the body of a batch.
type Request struct {
	Messages []Item `json:"messages"`
}

// Result is the answer for one envelope of a batch.
type Result struct {
	Status       int             `json:"status"`
	Body         json.RawMessage `json:"body,omitempty"`
	Error        *wire.Error     `json:"error,omitempty"`
	RetryAfterMS int64           `json:"retry_after_ms,omitempty"`
}

// Answer is the answer to a batch.
type Answer struct {
	Results []Result `json:"results"`
}

// AppendJSON appends the batch as JSON, its envelopes byte for byte (they
// are JSON already: encoding/json would scan each of them again).
func (r *Request) AppendJSON(b []byte) []byte {
	b = append(b, `{"messages":[`...)
	for i, it := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"seq":`...)
		b = strconv.AppendUint(b, it.Seq, 10)
		if it.Prev != 0 {
			b = append(b, `,"prev":`...)
			b = strconv.AppendUint(b, it.Prev, 10)
		}
		b = append(b, `,"envelope":`...)
		b = append(b, it.Envelope...)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// Size is about the size of r as JSON.
func (r *Request) Size() int {
	n := 16
	for _, it := range r.Messages {
		n += len(it.Envelope) + 64
	}
	return n
}

// AppendJSON appends the answer as JSON, its bodies byte for byte (JSON
// already).
func (a *Answer) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"results":[`...)
	for i, r := range a.Results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"status":`...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
		if len(r.Body) > 0 {
			b = append(b, `,"body":`...)
			b = append(b, r.Body...)
		}
		if r.Error != nil {
			e, err := wire.JSON.Marshal(r.Error)
			if err != nil {
				return nil, err
			}
			b = append(b, `,"error":`...)
			b = append(b, e...)
		}
		if r.RetryAfterMS != 0 {
			b = append(b, `,"retry_after_ms":`...)
			b = strconv.AppendInt(b, r.RetryAfterMS, 10)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// Reading batches and their answers. What this agent writes (the
// encoders above: exact keys, integers, no nulls) is read in
// place; anything else — other key spellings, nulls, errors in answers —
// goes through encoding/json, whose rules decide. The fast path accepts
// only documents encoding/json reads the same way.

// DecodeRequest reads the body of a batch.
func DecodeRequest(body []byte) (*Request, error) {
	if req, ok := scanRequest(body); ok {
		return req, nil
	}
	var req Request
	if err := wire.JSON.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	return &req, nil
}

// DecodeAnswer reads the answer to a batch into ans.
func DecodeAnswer(b []byte, ans *Answer) error {
	if scanAnswer(b, ans) {
		return nil
	}
	*ans = Answer{}
	return wire.JSON.Unmarshal(b, ans)
}

func scanRequest(body []byte) (*Request, bool) {
	if !utf8.Valid(body) {
		return nil, false
	}
	s := &batchScan{b: body}
	req := &Request{}
	ok := s.list("messages", func() bool {
		var it Item
		var seen [3]bool
		ok := s.object(func(key string) bool {
			switch key {
			case "seq":
				return !seen[0] && s.uint(&it.Seq, &seen[0])
			case "prev":
				return !seen[1] && s.uint(&it.Prev, &seen[1])
			case "envelope":
				if seen[2] {
					return false
				}
				v, ok := s.value()
				// A copy: the feed keeps it beyond the request's buffer.
				it.Envelope, seen[2] = append(json.RawMessage(nil), v...), true
				return ok
			}
			return false
		})
		req.Messages = append(req.Messages, it)
		return ok
	})
	return req, ok
}

func scanAnswer(b []byte, ans *Answer) bool {
	if !utf8.Valid(b) {
		return false
	}
	s := &batchScan{b: b}
	*ans = Answer{}
	return s.list("results", func() bool {
		var r Result
		var seen [3]bool
		var status, retry uint64
		ok := s.object(func(key string) bool {
			switch key {
			case "status":
				return !seen[0] && s.uint(&status, &seen[0]) && status < 1000
			case "body":
				if seen[1] {
					return false
				}
				v, ok := s.value()
				r.Body, seen[1] = v, true
				return ok && string(v) != "null"
			case "retry_after_ms":
				return !seen[2] && s.uint(&retry, &seen[2]) && retry < 1<<53
			}
			return false // "error" and anything else: encoding/json
		})
		r.Status, r.RetryAfterMS = int(status), int64(retry)
		ans.Results = append(ans.Results, r)
		return ok
	})
}

// batchScan reads the fast path's documents.
type batchScan struct {
	b []byte
	i int
}

func (s *batchScan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// lit reads c after white space.
func (s *batchScan) lit(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads a key without escapes and its colon.
func (s *batchScan) key() (string, bool) {
	if !s.lit('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.b) && s.b[s.i] != '"' {
		if c := s.b[s.i]; c == '\\' || c < 0x20 || c >= 0x80 {
			return "", false
		}
		s.i++
	}
	if s.i >= len(s.b) {
		return "", false
	}
	k := string(s.b[start:s.i])
	s.i++
	return k, s.lit(':')
}

// uint reads a non-negative integer without sign, fraction or exponent
// that fits in 64 bits.
func (s *batchScan) uint(p *uint64, seen *bool) bool {
	s.ws()
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	d := s.b[start:s.i]
	if len(d) == 0 || len(d) > 1 && d[0] == '0' || s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false
	}
	v, err := strconv.ParseUint(string(d), 10, 64)
	*p, *seen = v, true
	return err == nil
}

// value reads any JSON value (checked as encoding/json would).
func (s *batchScan) value() ([]byte, bool) {
	s.ws()
	n, err := wire.JSONValueEnd(s.b[s.i:])
	if err != nil {
		return nil, false
	}
	start := s.i
	s.i += n
	return s.b[start:s.i], true
}

// object reads an object, calling field at each key's value.
func (s *batchScan) object(field func(key string) bool) bool {
	if !s.lit('{') {
		return false
	}
	if s.lit('}') {
		return true
	}
	for {
		k, ok := s.key()
		if !ok || !field(k) {
			return false
		}
		if s.lit('}') {
			return true
		}
		if !s.lit(',') {
			return false
		}
	}
}

// list reads the whole document {"<name>":[elem, ...]}.
func (s *batchScan) list(name string, elem func() bool) bool {
	if !s.lit('{') {
		return false
	}
	if k, ok := s.key(); !ok || k != name || !s.lit('[') {
		return false
	}
	if !s.lit(']') {
		for {
			if !elem() {
				return false
			}
			if s.lit(']') {
				break
			}
			if !s.lit(',') {
				return false
			}
		}
	}
	if !s.lit('}') {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}
