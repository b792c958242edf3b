// Package hildb keeps the records of human-in-the-loop (SPEC §9) in the
// store, through store.Records: each task's request for a person with
// its escalation state, the audit trail of steps, and the retention
// index of the requests that stopped being pending. Package hil owns
// their meaning; the layout on disk is the one the store kept before the
// records left it, byte for byte:
//
//	hil
//	  requests  task_id → Request JSON (the task's latest request)
//	  steps     task_id 0x00 seq(uint64 BE) → Step JSON (audit trail)
//	  closed    closed_at(unix ns, uint64 BE) task_id → empty (retention index)
//
// seq comes from the steps bucket's sequence, so it orders steps across
// all tasks. A task that asks a person again replaces its request record;
// the steps of every round stay under its id. The buckets are created by
// the first write that needs them, so files written before they existed
// open unchanged.
package hildb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

var (
	requests = store.JSONRecords[Request]("hil", "requests")
	steps    = store.JSONRecords[Step]("hil", "steps")
	closed   = store.RawRecords("hil", "closed")
	// stepKeys are the steps undecoded, for Prune.
	stepKeys = store.RawRecords("hil", "steps")
)

// States of a Request.
const (
	// Pending: waiting for a decision.
	Pending = "pending"
	// Decided: a person (or the escalation default) decided.
	Decided = "decided"
	// Closed: the task stopped waiting without a decision made here
	// (cancelled, expired, decided through another route).
	Closed = "closed"
)

// Request is a task's request for a person and its escalation state.
type Request struct {
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
	Level     int       `json:"level"`
	Deadline  time.Time `json:"deadline"`
	CreatedAt time.Time `json:"created_at"`
	State     string    `json:"state"`
	Decision  *Decision `json:"decision,omitempty"`
	// ClosedAt is when the request stopped being pending; Note says why
	// when it was closed without a decision.
	ClosedAt time.Time `json:"closed_at,omitzero"`
	Note     string    `json:"note,omitempty"`
}

// Decision is the decision that ended a request.
type Decision struct {
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

// Step is one entry of the audit trail.
type Step struct {
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

// ErrBadKey: a task id that is empty or holds a NUL byte.
var ErrBadKey = errors.New("hil record needs a task id without NUL bytes")

func key(taskID string) ([]byte, error) {
	if taskID == "" || bytes.IndexByte([]byte(taskID), 0) >= 0 {
		return nil, ErrBadKey
	}
	return []byte(taskID), nil
}

func beTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

func closedKey(r *Request) []byte {
	return append(beTime(r.ClosedAt), r.TaskID...)
}

// PutRequest writes a request record, keeping the retention index in
// step: a request that is no longer pending is indexed by ClosedAt.
func PutRequest(tx *store.Tx, r *Request) error {
	k, err := key(r.TaskID)
	if err != nil {
		return err
	}
	var prev Request
	switch err := requests.GetInto(tx, k, &prev); {
	case err == nil:
		if prev.State != Pending {
			if err := closed.Delete(tx, closedKey(&prev)); err != nil {
				return err
			}
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if r.State != Pending {
		var empty []byte
		if err := closed.Put(tx, closedKey(r), &empty); err != nil {
			return err
		}
	}
	return requests.Put(tx, k, r)
}

// GetRequest reads a task's request record; store.ErrNotFound if it has
// none.
func GetRequest(tx *store.Tx, taskID string) (*Request, error) {
	return requests.Get(tx, []byte(taskID))
}

// Requests lists up to limit request records, newest task first (task
// ids are UUID v7), continuing after the task id after when it is set.
// With pendingOnly only pending ones are listed. It returns the id to
// continue after ("" when there are no more).
func Requests(tx *store.Tx, pendingOnly bool, after string, limit int) ([]*Request, string, error) {
	if limit <= 0 {
		limit = 50
	}
	var from []byte
	if after != "" {
		from = []byte(after)
	}
	var out []*Request
	next := ""
	err := requests.ScanBack(tx, from, func(k []byte, r *Request) error {
		if after != "" && string(k) >= after {
			return nil
		}
		if pendingOnly && r.State != Pending {
			return nil
		}
		if len(out) == limit {
			next = out[len(out)-1].TaskID
			return store.ErrStop
		}
		c := *r
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

// AppendStep adds a step to the audit trail and sets its Seq.
func AppendStep(tx *store.Tx, s *Step) error {
	k, err := key(s.TaskID)
	if err != nil {
		return err
	}
	seq, err := steps.NextSequence(tx)
	if err != nil {
		return fmt.Errorf("hil step sequence: %w", err)
	}
	s.Seq = seq
	k = append(append(k, 0), binary.BigEndian.AppendUint64(nil, seq)...)
	return steps.Put(tx, k, s)
}

// Steps returns a task's audit trail in order.
func Steps(tx *store.Tx, taskID string) ([]*Step, error) {
	prefix := append([]byte(taskID), 0)
	var out []*Step
	err := steps.Scan(tx, prefix, func(k []byte, s *Step) error {
		if !bytes.HasPrefix(k, prefix) {
			return store.ErrStop
		}
		c := *s
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Prune deletes requests that stopped being pending before olderThan,
// then the oldest ones beyond keep, with their audit trails, looking at
// most at max index entries. It returns how many requests it deleted.
func Prune(tx *store.Tx, olderThan time.Time, keep, max int) (int, error) {
	total := closed.Count(tx)
	cut := beTime(olderThan)
	var gone [][]byte
	err := closed.Scan(tx, nil, func(ck []byte, _ *[]byte) error {
		n := len(gone)
		if n >= max || len(ck) < 8 || (bytes.Compare(ck[:8], cut) >= 0 && total-n <= keep) {
			return store.ErrStop
		}
		gone = append(gone, bytes.Clone(ck))
		return nil
	})
	if err != nil {
		return 0, err
	}
	for n, k := range gone {
		id := k[8:]
		if err := requests.Delete(tx, id); err != nil {
			return n, err
		}
		prefix := append(append([]byte(nil), id...), 0)
		var trail [][]byte
		err := stepKeys.Scan(tx, prefix, func(sk []byte, _ *[]byte) error {
			if !bytes.HasPrefix(sk, prefix) {
				return store.ErrStop
			}
			trail = append(trail, bytes.Clone(sk))
			return nil
		})
		if err != nil {
			return n, err
		}
		for _, sk := range trail {
			if err := steps.Delete(tx, sk); err != nil {
				return n, err
			}
		}
		if err := closed.Delete(tx, k); err != nil {
			return n, err
		}
	}
	return len(gone), nil
}
