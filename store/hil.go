package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Human-in-the-loop requests, their escalation state and their audit trail
// (SPEC §9), in one bucket with three nested buckets:
//
//	hil
//	  requests  task_id → HILRequest JSON (the task's latest request)
//	  steps     task_id 0x00 seq(uint64 BE) → HILStep JSON (audit trail)
//	  closed    closed_at(unix ns, uint64 BE) task_id → empty (retention index)
//
// seq comes from the steps bucket's sequence, so it orders steps across
// all tasks. A task that asks a person again replaces its request record;
// the steps of every round stay under its id. The buckets are created by
// the first write that needs them, so files written before they existed
// open unchanged.
var (
	bucketHIL         = []byte("hil")
	bucketHILRequests = []byte("requests")
	bucketHILSteps    = []byte("steps")
	bucketHILClosed   = []byte("closed")
)

// States of a HILRequest.
const (
	// HILPending: waiting for a decision.
	HILPending = "pending"
	// HILDecided: a person (or the escalation default) decided.
	HILDecided = "decided"
	// HILClosed: the task stopped waiting without a decision made here
	// (cancelled, expired, decided through another route).
	HILClosed = "closed"
)

// HILRequest is a task's request for a person and its escalation state.
type HILRequest struct {
	TaskID   string `json:"task_id"`
	TaskType string `json:"task_type"`
	// Target is the peer a delegated task runs on (its person answers for
	// the peer's request); empty for local tasks.
	Target string `json:"target,omitempty"`
	// EnteredAt is when the task entered need_human; it tells a task's
	// successive requests apart.
	EnteredAt time.Time                  `json:"entered_at"`
	Request   *wire.TaskNeedHumanPayload `json:"request"`
	// Level is the current escalation level (1-based) and Deadline its end.
	Level     int          `json:"level"`
	Deadline  time.Time    `json:"deadline"`
	CreatedAt time.Time    `json:"created_at"`
	State     string       `json:"state"`
	Decision  *HILDecision `json:"decision,omitempty"`
	// ClosedAt is when the request stopped being pending; Note says why
	// when it was closed without a decision.
	ClosedAt time.Time `json:"closed_at,omitzero"`
	Note     string    `json:"note,omitempty"`
}

// HILDecision is the decision that ended a request.
type HILDecision struct {
	Action          string         `json:"action"`
	DecidedBy       string         `json:"decided_by"`
	DecidedByName   string         `json:"decided_by_name,omitempty"`
	Level           int            `json:"level"`
	ApprovedFields  map[string]any `json:"approved_fields,omitempty"`
	RejectionReason string         `json:"rejection_reason,omitempty"`
	Notes           string         `json:"notes,omitempty"`
	At              time.Time      `json:"at"`
	// TaskStatus is the task's state right after the decision.
	TaskStatus wire.Status `json:"task_status,omitempty"`
}

// HILStep is one entry of the audit trail.
type HILStep struct {
	Seq    uint64    `json:"seq"`
	TaskID string    `json:"task_id"`
	At     time.Time `json:"at"`
	// Step is what happened: created, escalated, notified, notify_failed,
	// decided, default_applied, decision_failed, closed.
	Step   string `json:"step"`
	Level  int    `json:"level,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Action string `json:"action,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// ErrBadHILKey: a task id that is empty or holds a NUL byte.
var ErrBadHILKey = errors.New("hil record needs a task id without NUL bytes")

// hil returns one nested bucket of hil; in a read transaction a missing
// bucket is nil.
func (tx *Tx) hil(name []byte) (*bucket, error) {
	top, err := tx.bucket(bucketHIL)
	if err != nil || top == nil {
		return nil, err
	}
	if tx.writable() {
		return top.CreateBucketIfNotExists(name)
	}
	return top.Bucket(name), nil
}

func hilKey(taskID string) ([]byte, error) {
	if taskID == "" || bytes.IndexByte([]byte(taskID), 0) >= 0 {
		return nil, ErrBadHILKey
	}
	return []byte(taskID), nil
}

func hilClosedKey(r *HILRequest) []byte {
	return append(beTime(r.ClosedAt), r.TaskID...)
}

// PutHILRequest writes a request record, keeping the retention index in
// step: a request that is no longer pending is indexed by ClosedAt.
func (tx *Tx) PutHILRequest(r *HILRequest) error {
	k, err := hilKey(r.TaskID)
	if err != nil {
		return err
	}
	reqs, err := tx.hil(bucketHILRequests)
	if err != nil {
		return err
	}
	closed, err := tx.hil(bucketHILClosed)
	if err != nil {
		return err
	}
	var prev HILRequest
	switch err := getJSON(reqs, k, &prev); {
	case err == nil:
		if prev.State != HILPending {
			if err := closed.Delete(hilClosedKey(&prev)); err != nil {
				return err
			}
		}
	case !errors.Is(err, ErrNotFound):
		return err
	}
	if r.State != HILPending {
		if err := closed.Put(hilClosedKey(r), nil); err != nil {
			return err
		}
	}
	return putJSON(reqs, k, r)
}

// HILRequest reads a task's request record; ErrNotFound if it has none.
func (tx *Tx) HILRequest(taskID string) (*HILRequest, error) {
	reqs, err := tx.hil(bucketHILRequests)
	if err != nil {
		return nil, err
	}
	if reqs == nil {
		return nil, ErrNotFound
	}
	r := new(HILRequest)
	if err := getJSON(reqs, []byte(taskID), r); err != nil {
		return nil, err
	}
	return r, nil
}

// HILRequests lists up to limit request records, newest task first (task
// ids are UUID v7), continuing after the task id after when it is set.
// With pendingOnly only pending ones are listed. It returns the id to
// continue after ("" when there are no more).
func (tx *Tx) HILRequests(pendingOnly bool, after string, limit int) ([]*HILRequest, string, error) {
	if limit <= 0 {
		limit = 50
	}
	reqs, err := tx.hil(bucketHILRequests)
	if err != nil || reqs == nil {
		return nil, "", err
	}
	c := reqs.Cursor()
	var k, v []byte
	if after != "" {
		k, v = c.Seek([]byte(after))
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, []byte(after)) >= 0 {
			k, v = c.Prev()
		}
	} else {
		k, v = c.Last()
	}
	var out []*HILRequest
	for ; k != nil; k, v = c.Prev() {
		r := new(HILRequest)
		if err := json.Unmarshal(v, r); err != nil {
			return nil, "", fmt.Errorf("decode hil request %q: %w", k, err)
		}
		if pendingOnly && r.State != HILPending {
			continue
		}
		if len(out) == limit {
			return out, out[len(out)-1].TaskID, nil
		}
		out = append(out, r)
	}
	return out, "", nil
}

// AppendHILStep adds a step to the audit trail and sets its Seq.
func (tx *Tx) AppendHILStep(s *HILStep) error {
	k, err := hilKey(s.TaskID)
	if err != nil {
		return err
	}
	steps, err := tx.hil(bucketHILSteps)
	if err != nil {
		return err
	}
	seq, err := steps.NextSequence()
	if err != nil {
		return fmt.Errorf("hil step sequence: %w", err)
	}
	s.Seq = seq
	k = append(append(k, 0), binary.BigEndian.AppendUint64(nil, seq)...)
	return putJSON(steps, k, s)
}

// HILSteps returns a task's audit trail in order.
func (tx *Tx) HILSteps(taskID string) ([]*HILStep, error) {
	steps, err := tx.hil(bucketHILSteps)
	if err != nil || steps == nil {
		return nil, err
	}
	prefix := append([]byte(taskID), 0)
	c := steps.Cursor()
	var out []*HILStep
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		s := new(HILStep)
		if err := getJSON(steps, k, s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// PruneHIL deletes requests that stopped being pending before olderThan,
// then the oldest ones beyond keep, with their audit trails, looking at
// most at max index entries. It returns how many requests it deleted.
func (tx *Tx) PruneHIL(olderThan time.Time, keep, max int) (int, error) {
	closed, err := tx.hil(bucketHILClosed)
	if err != nil || closed == nil {
		return 0, err
	}
	reqs, err := tx.hil(bucketHILRequests)
	if err != nil {
		return 0, err
	}
	steps, err := tx.hil(bucketHILSteps)
	if err != nil {
		return 0, err
	}
	total := closed.KeyN()
	cut := beTime(olderThan)
	c := closed.Cursor()
	n := 0
	for ck, _ := c.First(); ck != nil && n < max; ck, _ = c.First() {
		if len(ck) < 8 || (bytes.Compare(ck[:8], cut) >= 0 && total-n <= keep) {
			break
		}
		// Copy: the cursor's key is not valid across the deletes below.
		k := bytes.Clone(ck)
		id := k[8:]
		if err := reqs.Delete(id); err != nil {
			return n, err
		}
		prefix := append(append([]byte(nil), id...), 0)
		sc := steps.Cursor()
		for sk, _ := sc.Seek(prefix); sk != nil && bytes.HasPrefix(sk, prefix); sk, _ = sc.Seek(prefix) {
			if err := steps.Delete(sk); err != nil {
				return n, err
			}
		}
		if err := closed.Delete(k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
