package outbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/store"
)

// The records of the outbox, in the store through its typed-bucket helper
// (store.Records), byte for byte as they were written when they were
// store.Tx's:
//
//	outbox       dest 0x00 seq(uint64 BE) → Item JSON (pending)
//	outbox_dead  dest 0x00 seq(uint64 BE) → Item JSON (dead letters)
//	outbox_id    id → state('p' or 'd') dest 0x00 seq(uint64 BE)
//
// dest is "peer:<agent_id>" or "url:<callback URL>"; seq comes from one
// counter (the outbox bucket's sequence), so keys sort by destination and
// then in the order items were queued. A dead letter keeps its key when it
// is requeued, which puts it back ahead of everything queued after it.
// Each bucket is created by the first write that needs it.

var (
	pendingItems = itemRecords("outbox")
	deadItems    = itemRecords("outbox_dead")
	// pendingRaw and deadRaw read the same buckets without decoding
	// (scans decode only what they keep); ids holds the index.
	pendingRaw = rawView("outbox")
	deadRaw    = rawView("outbox_dead")
	ids        = store.RawRecords("outbox_id")
)

// itemRecords declares records of items, kept as the JSON
// encoding/json writes (appendItem) and read by encoding/json.
func itemRecords(path string) store.Records[Item] {
	return store.NewRecords(appendItem, func(raw []byte, it *Item) error { return json.Unmarshal(raw, it) }, path)
}

// rawView declares records read as the stored bytes, without a copy:
// valid only during the call that is given them.
func rawView(path string) store.Records[[]byte] {
	return store.NewRecords(
		func(dst []byte, v *[]byte) ([]byte, error) { return append(dst, *v...), nil },
		func(raw []byte, v *[]byte) error { *v = raw; return nil },
		path)
}

// Errors of the outbox's records.
var (
	// ErrBadDestination: an item names neither a peer nor a URL, both, or
	// one with a NUL byte.
	ErrBadDestination = errors.New("outbox item needs exactly one of peer or url, without NUL bytes")
)

// State says which list an item is on.
type State string

// The two lists.
const (
	Pending State = "pending"
	Dead    State = "dead"
)

const (
	statePending = 'p'
	stateDead    = 'd'
)

// Item is one message waiting to be delivered, or one that gave up.
type Item struct {
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
func (it *Item) Dest() string {
	if it.Peer != "" {
		return PeerDest(it.Peer)
	}
	return URLDest(it.URL)
}

// PeerDest is the destination key of a peer.
func PeerDest(agentID string) string { return peerPrefix + agentID }

// URLDest is the destination key of a webhook URL.
func URLDest(url string) string { return "url:" + url }

const peerPrefix = "peer:"

func itemKey(dest string, seq uint64) []byte {
	k := make([]byte, 0, len(dest)+9)
	k = append(k, dest...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

func destPrefix(dest string) []byte { return append([]byte(dest), 0) }

func items(s State) store.Records[Item] {
	if s == Dead {
		return deadItems
	}
	return pendingItems
}

func raws(s State) store.Records[[]byte] {
	if s == Dead {
		return deadRaw
	}
	return pendingRaw
}

// ref reads the index entry of id: its state and its key.
func ref(tx *store.Tx, id string) (byte, []byte, error) {
	r, err := ids.Get(tx, []byte(id))
	if err != nil {
		return 0, nil, err
	}
	if len(*r) < 2 {
		return 0, nil, store.ErrNotFound
	}
	return (*r)[0], (*r)[1:], nil
}

// locate finds the key of a pending (or dead) item by id.
func locate(tx *store.Tx, id string, want byte) ([]byte, error) {
	st, k, err := ref(tx, id)
	if err != nil {
		return nil, err
	}
	if st != want {
		return nil, store.ErrNotFound
	}
	return k, nil
}

func putRef(tx *store.Tx, id string, st byte, k []byte) error {
	v := append([]byte{st}, k...)
	return ids.Put(tx, []byte(id), &v)
}

// Put adds it at the end of its destination's queue and sets it.Seq.
func Put(tx *store.Tx, it *Item) error {
	if (it.Peer == "") == (it.URL == "") || strings.IndexByte(it.Peer, 0) >= 0 || strings.IndexByte(it.URL, 0) >= 0 {
		return ErrBadDestination
	}
	if ids.Has(tx, []byte(it.ID)) {
		return fmt.Errorf("outbox item %s: %w", it.ID, store.ErrExists)
	}
	seq, err := pendingItems.NextSequence(tx)
	if err != nil {
		return err
	}
	it.Seq = seq
	k := itemKey(it.Dest(), seq)
	if err := pendingItems.Put(tx, k, it); err != nil {
		return err
	}
	return putRef(tx, it.ID, statePending, k)
}

// Batch returns up to max pending items of dest, oldest first, passing
// over the items whose seq skip reports (without decoding or counting
// them); a nil skip skips none.
func Batch(tx *store.Tx, dest string, max int, skip func(seq uint64) bool) ([]*Item, error) {
	prefix := destPrefix(dest)
	var out []*Item
	err := pendingRaw.Scan(tx, prefix, func(k []byte, v *[]byte) error {
		if !bytes.HasPrefix(k, prefix) || len(out) >= max {
			return store.ErrStop
		}
		if skip != nil && len(k) == len(prefix)+8 && skip(binary.BigEndian.Uint64(k[len(prefix):])) {
			return nil
		}
		it := new(Item)
		if err := it.UnmarshalJSON(*v); err != nil { // not json.Unmarshal: it validates the whole item first
			return fmt.Errorf("decode outbox item %q: %w", k, err)
		}
		out = append(out, it)
		return nil
	})
	return out, err
}

// Dests lists the destinations that have pending items.
func Dests(tx *store.Tx) ([]string, error) {
	var out []string
	var from []byte
	for {
		dest, found := "", false
		err := pendingRaw.Scan(tx, from, func(k []byte, _ *[]byte) error {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				return fmt.Errorf("outbox key %q has no destination", k)
			}
			dest, found = string(k[:i]), true
			return store.ErrStop
		})
		if err != nil || !found {
			return out, err
		}
		out = append(out, dest)
		// The rest of this destination is skipped: the next key after dest 0x01.
		from = append([]byte(dest), 1)
	}
}

// Get reads one item by id and tells which list it is on.
func Get(tx *store.Tx, id string) (*Item, State, error) {
	st, k, err := ref(tx, id)
	if err != nil {
		return nil, "", err
	}
	state := Pending
	if st == stateDead {
		state = Dead
	}
	it, err := items(state).Get(tx, k)
	if err != nil {
		return nil, "", err
	}
	return it, state, nil
}

// Delivered removes a pending item after its delivery.
func Delivered(tx *store.Tx, id string) error {
	k, err := locate(tx, id, statePending)
	if err != nil {
		return err
	}
	if err := pendingItems.Delete(tx, k); err != nil {
		return err
	}
	return ids.Delete(tx, []byte(id))
}

// RetryLater rewrites a pending item after a failed attempt (its
// Attempts, NextAttempt and LastError).
func RetryLater(tx *store.Tx, it *Item) error {
	k, err := locate(tx, it.ID, statePending)
	if err != nil {
		return err
	}
	return pendingItems.Put(tx, k, it)
}

// Kill moves a pending item to the dead letters, as it is given (set
// LastError, DeadAt and Unreachable first).
func Kill(tx *store.Tx, it *Item) error {
	k, err := locate(tx, it.ID, statePending)
	if err != nil {
		return err
	}
	if err := pendingItems.Delete(tx, k); err != nil {
		return err
	}
	if err := deadItems.Put(tx, k, it); err != nil {
		return err
	}
	return putRef(tx, it.ID, stateDead, k)
}

// Revive moves one dead letter back to its queue, at its original place,
// with its attempts reset and due at now.
func Revive(tx *store.Tx, id string, now time.Time) (*Item, error) {
	k, err := locate(tx, id, stateDead)
	if err != nil {
		return nil, err
	}
	return revive(tx, k, now)
}

func revive(tx *store.Tx, k []byte, now time.Time) (*Item, error) {
	it, err := deadItems.Get(tx, k)
	if err != nil {
		return nil, err
	}
	it.Attempts, it.NextAttempt, it.DeadAt, it.Unreachable = 0, now, time.Time{}, false
	if err := deadItems.Delete(tx, k); err != nil {
		return nil, err
	}
	if err := pendingItems.Put(tx, k, it); err != nil {
		return nil, err
	}
	return it, putRef(tx, it.ID, statePending, k)
}

// deadKeys returns the keys of up to max dead letters of dest in order
// (with onlyUnreachable, those that gave up because it could not be
// reached).
func deadKeys(tx *store.Tx, dest string, onlyUnreachable bool, max int) ([][]byte, error) {
	prefix := destPrefix(dest)
	var keys [][]byte
	err := deadRaw.Scan(tx, prefix, func(k []byte, v *[]byte) error {
		if !bytes.HasPrefix(k, prefix) || len(keys) >= max {
			return store.ErrStop
		}
		if !onlyUnreachable || unreachable(*v) {
			keys = append(keys, append([]byte(nil), k...))
		}
		return nil
	})
	return keys, err
}

// ReviveDest requeues up to max dead letters of dest in their original
// order; with onlyUnreachable, just those that gave up because the
// destination could not be reached. It returns how many it requeued.
func ReviveDest(tx *store.Tx, dest string, onlyUnreachable bool, now time.Time, max int) (int, error) {
	keys, err := deadKeys(tx, dest, onlyUnreachable, max)
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		if _, err := revive(tx, k, now); err != nil {
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

// HasDead reports whether dest has dead letters (with onlyUnreachable,
// ones that gave up because it could not be reached).
func HasDead(tx *store.Tx, dest string, onlyUnreachable bool) bool {
	keys, err := deadKeys(tx, dest, onlyUnreachable, 1)
	return err == nil && len(keys) > 0
}

// Drop deletes an item, pending or dead.
func Drop(tx *store.Tx, id string) error {
	st, k, err := ref(tx, id)
	if err != nil {
		return err
	}
	r := pendingItems
	if st == stateDead {
		r = deadItems
	}
	if err := r.Delete(tx, k); err != nil {
		return err
	}
	return ids.Delete(tx, []byte(id))
}

// Filter selects items in List.
type Filter struct {
	State State
	// Dest, if set, keeps one destination (PeerDest or URLDest).
	Dest string
	// After is the id to continue after (a page token).
	After string
	Limit int
}

// List returns up to f.Limit items of one list in delivery order (by
// destination, then queue order) and the id to continue after ("" when
// there are no more).
func List(tx *store.Tx, f Filter) ([]*Item, string, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	want := byte(statePending)
	if f.State == Dead {
		want = stateDead
	}
	var prefix, from []byte
	if f.Dest != "" {
		prefix = destPrefix(f.Dest)
	}
	from = prefix
	if f.After != "" {
		k, err := locate(tx, f.After, want)
		if err != nil {
			return nil, "", fmt.Errorf("page token: %w", err)
		}
		from = k
	}
	var out []*Item
	next := ""
	err := raws(f.State).Scan(tx, from, func(k []byte, v *[]byte) error {
		if f.After != "" && bytes.Equal(k, from) {
			return nil
		}
		if !bytes.HasPrefix(k, prefix) {
			return store.ErrStop
		}
		if len(out) == f.Limit {
			next = out[len(out)-1].ID
			return store.ErrStop
		}
		it := new(Item)
		if err := it.UnmarshalJSON(*v); err != nil { // not json.Unmarshal: it validates the whole item first
			return fmt.Errorf("decode outbox item %q: %w", k, err)
		}
		out = append(out, it)
		return nil
	})
	if err != nil {
		return out, "", err
	}
	return out, next, nil
}

// Count is the number of items on one list.
func Count(tx *store.Tx, s State) int { return items(s).Count(tx) }
