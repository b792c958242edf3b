package agent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// The idempotency records, the agent's own, kept in two buckets of the
// store through its typed-bucket helper:
//
//	idem      scope 0x00 key → idemRecord JSON
//	idem_exp  created (unix ns, uint64 BE) scope 0x00 key → empty (the expiry index)
//
// A record is encoded before the write that stores it (encodeIdem), in
// the caller's goroutine: nothing is encoded on the store's writer.
var (
	idemRecords = store.RawRecords("idem")
	idemExpiry  = store.RawRecords("idem_exp")
)

// idemRecord is the stored outcome of a request made with an idempotency
// key: for a submit, the domain answer (the task as the request was
// answered), which each API renders again as it rendered the first
// answer; for the other creating routes (Idempotent), the answer as it
// was sent. Records of submits written before the domain form carry the
// answer as it was sent too; they are replayed so until they expire.
type idemRecord struct {
	// RequestHash identifies the request (the API's fingerprint of it).
	RequestHash string    `json:"request_hash"`
	TaskID      string    `json:"task_id,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	// Task is a submit's answer: the task as it was answered.
	Task *idemTask `json:"task,omitempty"`
	// Status, ContentType and Body are an answer kept as it was sent.
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// idemTask is a task as an answer saw it. Its JSON values (payload,
// result) are kept apart, byte for byte: an answer rendered again from
// them is the first answer, whatever white space or escapes they held.
type idemTask struct {
	Task    wire.Task `json:"task"`
	Payload []byte    `json:"payload,omitempty"`
	Result  []byte    `json:"result,omitempty"`
}

func snapshotOf(t *wire.Task) *idemTask {
	s := &idemTask{Task: *t, Payload: t.Payload, Result: t.Result}
	s.Task.Payload, s.Task.Result = nil, nil
	return s
}

// task is the answered task, a copy of its own.
func (s *idemTask) task() *wire.Task {
	t := s.Task
	t.Payload, t.Result = wire.JSONValue(s.Payload), wire.JSONValue(s.Result)
	return &t
}

// answer is the stored answer of r: a task, or the answer as sent.
func (r *idemRecord) answer() *idemAnswer {
	if r.Task != nil {
		return &idemAnswer{task: r.Task.task()}
	}
	return &idemAnswer{sent: &IdemAnswer{Status: r.Status, ContentType: r.ContentType, Body: r.Body, TaskID: r.TaskID}}
}

// idemAnswer is a stored answer as claim finds it: exactly one
// of task and sent is set.
type idemAnswer struct {
	task *wire.Task
	sent *IdemAnswer
}

func idemKeyOf(scope, key string) []byte {
	k := make([]byte, 0, len(scope)+1+len(key))
	k = append(k, scope...)
	k = append(k, 0)
	return append(k, key...)
}

// encodeIdem encodes r for putIdem, outside the store's writer.
func encodeIdem(r *idemRecord) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode idempotency record: %w", err)
	}
	return b, nil
}

// getIdem reads the record of (scope, key); store.ErrNotFound when there
// is none.
func getIdem(tx *store.Tx, scope, key string) (*idemRecord, error) {
	k := idemKeyOf(scope, key)
	raw, err := idemRecords.Get(tx, k)
	if err != nil {
		return nil, err
	}
	r := new(idemRecord)
	if err := json.Unmarshal(*raw, r); err != nil {
		return nil, fmt.Errorf("decode idempotency record %q: %w", k, err)
	}
	return r, nil
}

// putIdem writes the encoded record raw (created at created) of (scope,
// key). A first write also indexes it for expiry; an overwrite keeps the
// index of the original creation time.
func putIdem(tx *store.Tx, scope, key string, created time.Time, raw []byte) error {
	k := idemKeyOf(scope, key)
	if !idemRecords.Has(tx, k) {
		exp := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(k)), uint64(created.UnixNano()))
		empty := []byte{}
		if err := idemExpiry.Put(tx, append(exp, k...), &empty); err != nil {
			return err
		}
	}
	return idemRecords.Put(tx, k, &raw)
}

// pruneIdem deletes up to max records created before cutoff.
func pruneIdem(tx *store.Tx, cutoff time.Time, max int) (int, error) {
	cut := binary.BigEndian.AppendUint64(nil, uint64(cutoff.UnixNano()))
	n := 0
	err := idemExpiry.Scan(tx, nil, func(k []byte, _ *[]byte) error {
		if n >= max || len(k) < 8 || bytes.Compare(k[:8], cut) >= 0 {
			return store.ErrStop
		}
		if err := idemRecords.Delete(tx, k[8:]); err != nil {
			return err
		}
		if err := idemExpiry.Delete(tx, k); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
