// Package groupdb keeps the records of groups of agents (SPEC §10) in the
// store, through store.Records. Package group owns the meaning of the
// records; they are kept as JSON documents, under the keys the store
// used before the records left it (the layout is unchanged, byte for
// byte):
//
//	groups           group_id → group JSON
//	group_votes      group_id 0x00 vote_id → vote JSON
//	group_tasks      group_id 0x00 task_id → group task JSON
//	group_events     group_id (nested bucket): seq(uint64 BE) → event_id 0x00 event JSON
//	group_event_ids  group_id 0x00 event_id → seq(uint64 BE) (duplicate check)
//
// seq comes from the group's nested bucket's sequence, so it increases by
// one per event of that group and is never reused, even after old events
// are dropped. The buckets are created by the first write that needs them,
// so files written before they existed open unchanged.
package groupdb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/synapse-edge/synapse/store"
)

// docs are records whose values are JSON documents, checked on write and
// kept as they are.
func docs(path ...string) store.Records[[]byte] {
	return store.NewRecords(
		func(dst []byte, v *[]byte) ([]byte, error) {
			if !json.Valid(*v) {
				return nil, errors.New("record is not JSON")
			}
			return append(dst, *v...), nil
		},
		func(raw []byte, v *[]byte) error { *v = append((*v)[:0], raw...); return nil },
		path...)
}

var (
	groups   = docs("groups")
	votes    = docs("group_votes")
	tasks    = docs("group_tasks")
	events   = store.RawRecords("group_events")
	eventIDs = store.RawRecords("group_event_ids")
)

// ErrBadKey: a group, vote, task or event id that is empty, longer than
// 128 bytes or holds a NUL byte.
var ErrBadKey = errors.New("bad group record key")

// Event is one stored event of a group's log.
type Event struct {
	Seq uint64
	ID  string
	Doc json.RawMessage
}

func keyPart(id string) error {
	if id == "" || len(id) > 128 || bytes.IndexByte([]byte(id), 0) >= 0 {
		return fmt.Errorf("%w %q: ids are 1 to 128 bytes without NUL bytes", ErrBadKey, id)
	}
	return nil
}

// childKey is group_id 0x00 id.
func childKey(groupID, id string) ([]byte, error) {
	if err := keyPart(groupID); err != nil {
		return nil, err
	}
	if err := keyPart(id); err != nil {
		return nil, err
	}
	return append(append([]byte(groupID), 0), id...), nil
}

// Put writes a group's record.
func Put(tx *store.Tx, groupID string, doc []byte) error {
	if err := keyPart(groupID); err != nil {
		return err
	}
	return groups.Put(tx, []byte(groupID), &doc)
}

// Get reads a group's record; store.ErrNotFound if there is none.
func Get(tx *store.Tx, groupID string) ([]byte, error) {
	doc, err := groups.Get(tx, []byte(groupID))
	if err != nil {
		return nil, err
	}
	return *doc, nil
}

// Each calls fn with every group record in group id order; fn must not
// keep doc after it returns.
func Each(tx *store.Tx, fn func(groupID string, doc []byte) error) error {
	return groups.Scan(tx, nil, func(k []byte, doc *[]byte) error { return fn(string(k), *doc) })
}

// PutVote writes a vote of a group.
func PutVote(tx *store.Tx, groupID, voteID string, doc []byte) error {
	return putChild(tx, votes, groupID, voteID, doc)
}

// Vote reads a vote; store.ErrNotFound if there is none.
func Vote(tx *store.Tx, groupID, voteID string) ([]byte, error) {
	return child(tx, votes, groupID, voteID)
}

// Votes calls fn with every vote of a group ("" : of every group) in key
// order.
func Votes(tx *store.Tx, groupID string, fn func(groupID, voteID string, doc []byte) error) error {
	return eachChild(tx, votes, groupID, fn)
}

// DeleteVote deletes a vote (no error when it is not there).
func DeleteVote(tx *store.Tx, groupID, voteID string) error {
	return deleteChild(tx, votes, groupID, voteID)
}

// PutTask writes a group task.
func PutTask(tx *store.Tx, groupID, taskID string, doc []byte) error {
	return putChild(tx, tasks, groupID, taskID, doc)
}

// Task reads a group task; store.ErrNotFound if there is none.
func Task(tx *store.Tx, groupID, taskID string) ([]byte, error) {
	return child(tx, tasks, groupID, taskID)
}

// Tasks calls fn with every task of a group ("": of every group) in key
// order.
func Tasks(tx *store.Tx, groupID string, fn func(groupID, taskID string, doc []byte) error) error {
	return eachChild(tx, tasks, groupID, fn)
}

// DeleteTask deletes a group task (no error when it is not there).
func DeleteTask(tx *store.Tx, groupID, taskID string) error {
	return deleteChild(tx, tasks, groupID, taskID)
}

func putChild(tx *store.Tx, r store.Records[[]byte], groupID, id string, doc []byte) error {
	k, err := childKey(groupID, id)
	if err != nil {
		return err
	}
	return r.Put(tx, k, &doc)
}

func child(tx *store.Tx, r store.Records[[]byte], groupID, id string) ([]byte, error) {
	k, err := childKey(groupID, id)
	if err != nil {
		return nil, store.ErrNotFound
	}
	doc, err := r.Get(tx, k)
	if err != nil {
		return nil, err
	}
	return *doc, nil
}

func eachChild(tx *store.Tx, r store.Records[[]byte], groupID string, fn func(groupID, id string, doc []byte) error) error {
	var prefix []byte
	if groupID != "" {
		prefix = append([]byte(groupID), 0)
	}
	return r.Scan(tx, prefix, func(k []byte, doc *[]byte) error {
		if !bytes.HasPrefix(k, prefix) {
			return store.ErrStop
		}
		g, id, ok := bytes.Cut(k, []byte{0})
		if !ok {
			return nil
		}
		return fn(string(g), string(id), *doc)
	})
}

func deleteChild(tx *store.Tx, r store.Records[[]byte], groupID, id string) error {
	k, err := childKey(groupID, id)
	if err != nil {
		return err
	}
	return r.Delete(tx, k)
}

// keysWith returns copies of the keys of r that start with prefix.
func keysWith(tx *store.Tx, r store.Records[[]byte], prefix []byte) ([][]byte, error) {
	var out [][]byte
	err := r.Scan(tx, prefix, func(k []byte, _ *[]byte) error {
		if !bytes.HasPrefix(k, prefix) {
			return store.ErrStop
		}
		out = append(out, bytes.Clone(k))
		return nil
	})
	return out, err
}

// AppendEvent adds an event to a group's log: build gets the event's seq
// and returns its JSON. An event id already in the log is not added
// again: dup is true and seq is the stored event's. Beyond keep events the
// oldest are dropped (keep ≤ 0 keeps all).
func AppendEvent(tx *store.Tx, groupID, eventID string, keep int, build func(seq uint64) ([]byte, error)) (seq uint64, dup bool, err error) {
	ik, err := childKey(groupID, eventID)
	if err != nil {
		return 0, false, err
	}
	switch v, err := eventIDs.Get(tx, ik); {
	case err == nil && len(*v) == 8:
		return binary.BigEndian.Uint64(*v), true, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return 0, false, err
	}
	evs := events.In(groupID)
	seq, err = evs.NextSequence(tx)
	if err != nil {
		return 0, false, fmt.Errorf("group event sequence: %w", err)
	}
	doc, err := build(seq)
	if err != nil {
		return 0, false, err
	}
	if !json.Valid(doc) {
		return 0, false, fmt.Errorf("group event %s is not JSON", eventID)
	}
	sk := binary.BigEndian.AppendUint64(nil, seq)
	rec := append(append([]byte(eventID), 0), doc...)
	if err := evs.Put(tx, sk, &rec); err != nil {
		return 0, false, err
	}
	if err := eventIDs.Put(tx, ik, &sk); err != nil {
		return 0, false, err
	}
	if keep > 0 && seq > uint64(keep) {
		if err := dropEventsUpTo(tx, evs, groupID, seq-uint64(keep)); err != nil {
			return 0, false, err
		}
	}
	return seq, false, nil
}

// dropEventsUpTo deletes the events of a group with seq ≤ last.
func dropEventsUpTo(tx *store.Tx, evs store.Records[[]byte], groupID string, last uint64) error {
	type old struct{ seq, id []byte }
	var gone []old
	err := evs.Scan(tx, nil, func(k []byte, v *[]byte) error {
		if len(k) != 8 || binary.BigEndian.Uint64(k) > last {
			return store.ErrStop
		}
		id, _, _ := bytes.Cut(*v, []byte{0})
		gone = append(gone, old{bytes.Clone(k), bytes.Clone(id)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range gone {
		if err := eventIDs.Delete(tx, append(append([]byte(groupID), 0), e.id...)); err != nil {
			return err
		}
		if err := evs.Delete(tx, e.seq); err != nil {
			return err
		}
	}
	return nil
}

// Events returns up to limit events of a group with seq > after, in
// order.
func Events(tx *store.Tx, groupID string, after uint64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 100
	}
	var out []Event
	err := events.In(groupID).Scan(tx, binary.BigEndian.AppendUint64(nil, after+1), func(k []byte, v *[]byte) error {
		if len(out) >= limit {
			return store.ErrStop
		}
		if len(k) != 8 {
			return nil
		}
		id, doc, ok := bytes.Cut(*v, []byte{0})
		if !ok {
			return fmt.Errorf("group %s event %d: malformed record", groupID, binary.BigEndian.Uint64(k))
		}
		out = append(out, Event{Seq: binary.BigEndian.Uint64(k), ID: string(id), Doc: bytes.Clone(doc)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LastEvent is the seq of a group's newest event (0 when none).
func LastEvent(tx *store.Tx, groupID string) uint64 {
	return events.In(groupID).Sequence(tx)
}

// Delete deletes a group's record with its votes, tasks and events.
func Delete(tx *store.Tx, groupID string) error {
	if err := keyPart(groupID); err != nil {
		return err
	}
	if err := groups.Delete(tx, []byte(groupID)); err != nil {
		return err
	}
	prefix := append([]byte(groupID), 0)
	for _, r := range []store.Records[[]byte]{votes, tasks, eventIDs} {
		keys, err := keysWith(tx, r, prefix)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := r.Delete(tx, k); err != nil {
				return err
			}
		}
	}
	return events.In(groupID).Drop(tx)
}
