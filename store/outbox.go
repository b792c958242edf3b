package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The durable outbox of P2P messages and webhook callbacks (SPEC §6):
//
//	outbox       dest 0x00 seq(uint64 BE) → OutboxItem JSON (pending)
//	outbox_dead  dest 0x00 seq(uint64 BE) → OutboxItem JSON (dead letters)
//	outbox_id    id → state('p' or 'd') dest 0x00 seq(uint64 BE)
//
// dest is "peer:<agent_id>" or "url:<callback URL>"; seq comes from one
// counter (the outbox bucket's sequence), so keys sort by destination and
// then in the order items were queued. A dead letter keeps its key when it
// is requeued, which puts it back ahead of everything queued after it.

var (
	bucketOutbox     = []byte("outbox")
	bucketOutboxDead = []byte("outbox_dead")
	bucketOutboxID   = []byte("outbox_id")
)

// Errors of the outbox.
var (
	// ErrBadDestination: an item names neither a peer nor a URL, both, or
	// one with a NUL byte.
	ErrBadDestination = errors.New("outbox item needs exactly one of peer or url, without NUL bytes")
)

// OutboxState says which list an item is on.
type OutboxState string

// The two lists.
const (
	OutboxPending OutboxState = "pending"
	OutboxDead    OutboxState = "dead"
)

const (
	statePending = 'p'
	stateDead    = 'd'
)

// OutboxItem is one message waiting to be delivered, or one that gave up.
type OutboxItem struct {
	// ID is the message_id of the envelope (UUID v7); webhooks send it as
	// a header.
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
	// Peer is the receiving agent's id; URL a plain webhook. Exactly one
	// is set.
	Peer          string          `json:"peer,omitempty"`
	URL           string          `json:"url,omitempty"`
	Type          string          `json:"type"`
	CorrelationID string          `json:"correlation_id,omitempty"`
	Payload       json.RawMessage `json:"payload"`
	CreatedAt     time.Time       `json:"created_at"`
	// Attempts counts failed deliveries.
	Attempts    int       `json:"attempts"`
	NextAttempt time.Time `json:"next_attempt_at"`
	LastError   string    `json:"last_error,omitempty"`
	DeadAt      time.Time `json:"dead_at,omitzero"`
	// Unreachable marks a dead letter that gave up because its destination
	// could not be reached (as opposed to one the destination refused).
	Unreachable bool `json:"unreachable,omitempty"`
}

// Dest is the item's destination key.
func (it *OutboxItem) Dest() string {
	if it.Peer != "" {
		return PeerDest(it.Peer)
	}
	return URLDest(it.URL)
}

// PeerDest is the destination key of a peer.
func PeerDest(agentID string) string { return "peer:" + agentID }

// URLDest is the destination key of a webhook URL.
func URLDest(url string) string { return "url:" + url }

func outboxKey(dest string, seq uint64) []byte {
	k := make([]byte, 0, len(dest)+9)
	k = append(k, dest...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func destPrefix(dest string) []byte { return append([]byte(dest), 0) }

type outboxBuckets struct {
	pending, dead, ids *bucket
}

// outbox returns the three buckets; in a read transaction before the first
// item was ever queued they are nil.
func (tx *Tx) outbox() (outboxBuckets, error) {
	var ob outboxBuckets
	var err error
	if ob.pending, err = tx.bucket(bucketOutbox); err != nil {
		return ob, err
	}
	if ob.dead, err = tx.bucket(bucketOutboxDead); err != nil {
		return ob, err
	}
	ob.ids, err = tx.bucket(bucketOutboxID)
	return ob, err
}

func (ob outboxBuckets) empty() bool { return ob.pending == nil || ob.dead == nil || ob.ids == nil }

func (ob outboxBuckets) list(s OutboxState) *bucket {
	if s == OutboxDead {
		return ob.dead
	}
	return ob.pending
}

// Enqueue adds it at the end of its destination's queue and sets it.Seq.
func (tx *Tx) Enqueue(it *OutboxItem) error {
	if (it.Peer == "") == (it.URL == "") || strings.IndexByte(it.Peer, 0) >= 0 || strings.IndexByte(it.URL, 0) >= 0 {
		return ErrBadDestination
	}
	ob, err := tx.outbox()
	if err != nil {
		return err
	}
	if ob.ids.Get([]byte(it.ID)) != nil {
		return fmt.Errorf("outbox item %s: %w", it.ID, ErrExists)
	}
	seq, err := ob.pending.NextSequence()
	if err != nil {
		return err
	}
	it.Seq = seq
	k := outboxKey(it.Dest(), seq)
	if err := putJSON(ob.pending, k, it); err != nil {
		return err
	}
	return ob.ids.Put([]byte(it.ID), append([]byte{statePending}, k...))
}

// OutboxBatch returns up to max pending items of dest, oldest first.
func (tx *Tx) OutboxBatch(dest string, max int) ([]*OutboxItem, error) {
	return tx.OutboxBatchSkip(dest, max, nil)
}

// OutboxBatchSkip is OutboxBatch that passes over the items whose seq
// skip reports (without decoding or counting them); nil skips none.
func (tx *Tx) OutboxBatchSkip(dest string, max int, skip func(seq uint64) bool) ([]*OutboxItem, error) {
	ob, err := tx.outbox()
	if err != nil || ob.empty() {
		return nil, err
	}
	prefix := destPrefix(dest)
	c := ob.pending.Cursor()
	var out []*OutboxItem
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < max; k, v = c.Next() {
		if skip != nil && len(k) == len(prefix)+8 && skip(binary.BigEndian.Uint64(k[len(prefix):])) {
			continue
		}
		it := new(OutboxItem)
		if err := json.Unmarshal(v, it); err != nil {
			return out, fmt.Errorf("decode outbox item %q: %w", k, err)
		}
		out = append(out, it)
	}
	return out, nil
}

// OutboxDests lists the destinations that have pending items.
func (tx *Tx) OutboxDests() ([]string, error) {
	ob, err := tx.outbox()
	if err != nil || ob.empty() {
		return nil, err
	}
	var out []string
	c := ob.pending.Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			return out, fmt.Errorf("outbox key %q has no destination", k)
		}
		dest := string(k[:i])
		out = append(out, dest)
		// Skip the rest of this destination: the next key after dest 0x01.
		k, _ = c.Seek(append([]byte(dest), 1))
	}
	return out, nil
}

// OutboxGet reads one item by id and tells which list it is on.
func (tx *Tx) OutboxGet(id string) (*OutboxItem, OutboxState, error) {
	ob, err := tx.outbox()
	if err != nil {
		return nil, "", err
	}
	if ob.empty() {
		return nil, "", ErrNotFound
	}
	ref := ob.ids.Get([]byte(id))
	if len(ref) < 2 {
		return nil, "", ErrNotFound
	}
	state := OutboxPending
	if ref[0] == stateDead {
		state = OutboxDead
	}
	it := new(OutboxItem)
	if err := getJSON(ob.list(state), ref[1:], it); err != nil {
		return nil, "", err
	}
	return it, state, nil
}

// locate finds the key of a pending (or dead) item by id.
func (ob outboxBuckets) locate(id string, want byte) ([]byte, error) {
	ref := ob.ids.Get([]byte(id))
	if len(ref) < 2 || ref[0] != want {
		return nil, ErrNotFound
	}
	return append([]byte(nil), ref[1:]...), nil
}

// OutboxDelivered removes a pending item after its delivery.
func (tx *Tx) OutboxDelivered(id string) error {
	ob, err := tx.outbox()
	if err != nil {
		return err
	}
	k, err := ob.locate(id, statePending)
	if err != nil {
		return err
	}
	if err := ob.pending.Delete(k); err != nil {
		return err
	}
	return ob.ids.Delete([]byte(id))
}

// OutboxRetryLater rewrites a pending item after a failed attempt (its
// Attempts, NextAttempt and LastError).
func (tx *Tx) OutboxRetryLater(it *OutboxItem) error {
	ob, err := tx.outbox()
	if err != nil {
		return err
	}
	k, err := ob.locate(it.ID, statePending)
	if err != nil {
		return err
	}
	return putJSON(ob.pending, k, it)
}

// OutboxKill moves a pending item to the dead letters, as it is given (set
// LastError, DeadAt and Unreachable first).
func (tx *Tx) OutboxKill(it *OutboxItem) error {
	ob, err := tx.outbox()
	if err != nil {
		return err
	}
	k, err := ob.locate(it.ID, statePending)
	if err != nil {
		return err
	}
	if err := ob.pending.Delete(k); err != nil {
		return err
	}
	if err := putJSON(ob.dead, k, it); err != nil {
		return err
	}
	return ob.ids.Put([]byte(it.ID), append([]byte{stateDead}, k...))
}

// OutboxRevive moves one dead letter back to its queue, at its original
// place, with its attempts reset and due at now.
func (tx *Tx) OutboxRevive(id string, now time.Time) (*OutboxItem, error) {
	ob, err := tx.outbox()
	if err != nil {
		return nil, err
	}
	k, err := ob.locate(id, stateDead)
	if err != nil {
		return nil, err
	}
	return ob.revive(k, now)
}

func (ob outboxBuckets) revive(k []byte, now time.Time) (*OutboxItem, error) {
	it := new(OutboxItem)
	if err := getJSON(ob.dead, k, it); err != nil {
		return nil, err
	}
	it.Attempts, it.NextAttempt, it.DeadAt, it.Unreachable = 0, now, time.Time{}, false
	if err := ob.dead.Delete(k); err != nil {
		return nil, err
	}
	if err := putJSON(ob.pending, k, it); err != nil {
		return nil, err
	}
	return it, ob.ids.Put([]byte(it.ID), append([]byte{statePending}, k...))
}

// OutboxReviveDest requeues up to max dead letters of dest in their
// original order; with onlyUnreachable, just those that gave up because the
// destination could not be reached. It returns how many it requeued.
func (tx *Tx) OutboxReviveDest(dest string, onlyUnreachable bool, now time.Time, max int) (int, error) {
	ob, err := tx.outbox()
	if err != nil {
		return 0, err
	}
	prefix := destPrefix(dest)
	var keys [][]byte
	c := ob.dead.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(keys) < max; k, v = c.Next() {
		if onlyUnreachable && !unreachable(v) {
			continue
		}
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if _, err := ob.revive(k, now); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func unreachable(v []byte) bool {
	var it struct {
		Unreachable bool `json:"unreachable"`
	}
	return json.Unmarshal(v, &it) == nil && it.Unreachable
}

// OutboxHasDead reports whether dest has dead letters (with
// onlyUnreachable, ones that gave up because it could not be reached).
func (tx *Tx) OutboxHasDead(dest string, onlyUnreachable bool) bool {
	ob, err := tx.outbox()
	if err != nil || ob.empty() {
		return false
	}
	prefix := destPrefix(dest)
	c := ob.dead.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if !onlyUnreachable || unreachable(v) {
			return true
		}
	}
	return false
}

// OutboxDrop deletes an item, pending or dead.
func (tx *Tx) OutboxDrop(id string) error {
	ob, err := tx.outbox()
	if err != nil {
		return err
	}
	ref := ob.ids.Get([]byte(id))
	if len(ref) < 2 {
		return ErrNotFound
	}
	b := ob.pending
	if ref[0] == stateDead {
		b = ob.dead
	}
	if err := b.Delete(ref[1:]); err != nil {
		return err
	}
	return ob.ids.Delete([]byte(id))
}

// OutboxFilter selects items in OutboxList.
type OutboxFilter struct {
	State OutboxState
	// Dest, if set, keeps one destination (PeerDest or URLDest).
	Dest string
	// After is the id to continue after (a page token).
	After string
	Limit int
}

// OutboxList returns up to f.Limit items of one list in delivery order
// (by destination, then queue order) and the id to continue after ("" when
// there are no more).
func (tx *Tx) OutboxList(f OutboxFilter) ([]*OutboxItem, string, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	want := byte(statePending)
	if f.State == OutboxDead {
		want = stateDead
	}
	ob, err := tx.outbox()
	if err != nil || ob.empty() {
		return nil, "", err
	}
	b := ob.list(f.State)
	var prefix []byte
	if f.Dest != "" {
		prefix = destPrefix(f.Dest)
	}
	c := b.Cursor()
	var k, v []byte
	if f.After != "" {
		from, err := ob.locate(f.After, want)
		if err != nil {
			return nil, "", fmt.Errorf("page token: %w", err)
		}
		if k, v = c.Seek(from); k != nil && bytes.Equal(k, from) {
			k, v = c.Next()
		}
	} else {
		k, v = c.Seek(prefix)
	}
	var out []*OutboxItem
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(out) == f.Limit {
			return out, out[len(out)-1].ID, nil
		}
		it := new(OutboxItem)
		if err := json.Unmarshal(v, it); err != nil {
			return out, "", fmt.Errorf("decode outbox item %q: %w", k, err)
		}
		out = append(out, it)
	}
	return out, "", nil
}

// OutboxCount is the number of items on one list.
func (tx *Tx) OutboxCount(s OutboxState) int {
	ob, err := tx.outbox()
	if err != nil || ob.empty() {
		return 0
	}
	return ob.list(s).KeyN()
}
