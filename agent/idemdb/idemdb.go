// Package idemdb keeps the agent's idempotency records in the store,
// through its typed-bucket helper, and tracks the keys whose first
// request is being answered:
//
//	idem      scope 0x00 key → Record JSON
//	idem_exp  created (unix ns, uint64 BE) scope 0x00 key → empty (the expiry index)
//
// A record is encoded before the write that stores it (Encode), in the
// caller's goroutine: nothing is encoded on the store's writer.
package idemdb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

var (
	records = store.RawRecords("idem")
	expiry  = store.RawRecords("idem_exp")
)

// Record is the stored outcome of a request made with an idempotency
// key: for a submit, the domain answer (the task as the request was
// answered), which each API renders again as it rendered the first
// answer; for the other creating routes (Idempotent), the answer as it
// was sent. Records of submits written before the domain form carry the
// answer as it was sent too; they are replayed so until they expire.
type Record struct {
	// RequestHash identifies the request (the API's fingerprint of it).
	RequestHash string    `json:"request_hash"`
	TaskID      string    `json:"task_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// Task is a submit's answer: the task as it was answered.
	Task *Task `json:"task,omitempty"`
	// Status, ContentType and Body are an answer kept as it was sent.
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// Task is a task as an answer saw it. Its JSON values (payload,
// result) are kept apart, byte for byte: an answer rendered again from
// them is the first answer, whatever white space or escapes they held.
type Task struct {
	Task    wire.Task `json:"task"`
	Payload []byte    `json:"payload,omitempty"`
	Result  []byte    `json:"result,omitempty"`
}

// Snapshot is t as an answer saw it.
func Snapshot(t *wire.Task) *Task {
	s := &Task{Task: *t, Payload: t.Payload, Result: t.Result}
	s.Task.Payload, s.Task.Result = nil, nil
	return s
}

// Answered is the answered task, a copy of its own.
func (s *Task) Answered() *wire.Task {
	t := s.Task
	t.Payload, t.Result = wire.JSONValue(s.Payload), wire.JSONValue(s.Result)
	return &t
}

// Key is the record key of (scope, key).
func Key(scope, key string) []byte {
	k := make([]byte, 0, len(scope)+1+len(key))
	k = append(k, scope...)
	k = append(k, 0)
	return append(k, key...)
}

// Encode encodes r for Put, outside the store's writer.
func Encode(r *Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode idempotency record: %w", err)
	}
	return b, nil
}

// Get reads the record of (scope, key); store.ErrNotFound when there
// is none.
func Get(tx *store.Tx, scope, key string) (*Record, error) {
	k := Key(scope, key)
	raw, err := records.Get(tx, k)
	if err != nil {
		return nil, err
	}
	r := new(Record)
	if err := json.Unmarshal(*raw, r); err != nil {
		return nil, fmt.Errorf("decode idempotency record %q: %w", k, err)
	}
	return r, nil
}

// Put writes the encoded record raw (created at created) of (scope,
// key). A first write also indexes it for expiry; an overwrite keeps the
// index of the original creation time.
func Put(tx *store.Tx, scope, key string, created time.Time, raw []byte) error {
	k := Key(scope, key)
	if !records.Has(tx, k) {
		exp := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)), uint64(created.UnixNano()))
		empty := []byte{}
		if err := expiry.Put(tx, append(exp, k...), &empty); err != nil {
			return err
		}
	}
	return records.Put(tx, k, &raw)
}

// Prune deletes up to max records created before cutoff.
func Prune(tx *store.Tx, cutoff time.Time, max int) (int, error) {
	cut := binary.BigEndian.AppendUint64(nil, uint64(cutoff.UnixNano()))
	n := 0
	err := expiry.Scan(tx, nil, func(k []byte, _ *[]byte) error {
		if n >= max || len(k) < 8 || bytes.Compare(k[:8], cut) >= 0 {
			return store.ErrStop
		}
		if err := records.Delete(tx, k[8:]); err != nil {
			return err
		}
		if err := expiry.Delete(tx, k); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// Has tells whether (scope, key) has a record.
func Has(tx *store.Tx, scope, key string) bool { return records.Has(tx, Key(scope, key)) }

// Flights tracks the keys whose first request is being answered. The
// zero value is ready.
type Flights struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// Begin marks (scope, key) in flight; false when it is already.
func (f *Flights) Begin(scope, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]struct{}{}
	}
	k := scope + "\x00" + key
	if _, busy := f.m[k]; busy {
		return false
	}
	f.m[k] = struct{}{}
	return true
}

// End marks (scope, key) no longer in flight.
func (f *Flights) End(scope, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, scope+"\x00"+key)
}

// MaxKey bounds the length of an idempotency key, in bytes.
const MaxKey = 255

// CheckKey refuses a key longer than MaxKey bytes or
// with a byte that is not printable ASCII (invalid_params, field
// idempotency_key).
func CheckKey(key string) error {
	if len(key) > MaxKey {
		return wire.Errorf(wire.CodeInvalidParams, "the idempotency key is longer than %d bytes", MaxKey).With("field", "idempotency_key")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return wire.Errorf(wire.CodeInvalidParams, "the idempotency key must be printable ASCII").With("field", "idempotency_key")
		}
	}
	return nil
}
