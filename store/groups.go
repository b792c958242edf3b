package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// Groups of agents (SPEC §10). The group package owns the meaning of the
// records; the store keeps them as JSON documents under these keys:
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
var (
	bucketGroups        = []byte("groups")
	bucketGroupVotes    = []byte("group_votes")
	bucketGroupTasks    = []byte("group_tasks")
	bucketGroupEvents   = []byte("group_events")
	bucketGroupEventIDs = []byte("group_event_ids")
)

// ErrBadGroupKey: a group, vote, task or event id that is empty, longer
// than 128 bytes or holds a NUL byte.
var ErrBadGroupKey = errors.New("bad group record key")

// GroupEvent is one stored event of a group's log.
type GroupEvent struct {
	Seq uint64
	ID  string
	Doc json.RawMessage
}

func groupKeyPart(id string) error {
	if id == "" || len(id) > 128 || bytes.IndexByte([]byte(id), 0) >= 0 {
		return fmt.Errorf("%w %q: ids are 1 to 128 bytes without NUL bytes", ErrBadGroupKey, id)
	}
	return nil
}

// groupChildKey is group_id 0x00 id.
func groupChildKey(groupID, id string) ([]byte, error) {
	if err := groupKeyPart(groupID); err != nil {
		return nil, err
	}
	if err := groupKeyPart(id); err != nil {
		return nil, err
	}
	return append(append([]byte(groupID), 0), id...), nil
}

func putDoc(b *bucket, k []byte, doc []byte) error {
	if !json.Valid(doc) {
		return fmt.Errorf("record %q is not JSON", k)
	}
	return b.Put(k, doc)
}

// getDoc returns a copy of the value at k (ErrNotFound when absent).
func getDoc(b *bucket, k []byte) ([]byte, error) {
	if b == nil {
		return nil, ErrNotFound
	}
	v := b.Get(k)
	if v == nil {
		return nil, ErrNotFound
	}
	return bytes.Clone(v), nil
}

// PutGroup writes a group's record.
func (tx *Tx) PutGroup(groupID string, doc []byte) error {
	if err := groupKeyPart(groupID); err != nil {
		return err
	}
	b, err := tx.bucket(bucketGroups)
	if err != nil {
		return err
	}
	return putDoc(b, []byte(groupID), doc)
}

// Group reads a group's record; ErrNotFound if there is none.
func (tx *Tx) Group(groupID string) ([]byte, error) {
	b, err := tx.bucket(bucketGroups)
	if err != nil {
		return nil, err
	}
	return getDoc(b, []byte(groupID))
}

// Groups calls fn with every group record in group id order; fn must not
// keep doc after it returns.
func (tx *Tx) Groups(fn func(groupID string, doc []byte) error) error {
	b, err := tx.bucket(bucketGroups)
	if err != nil || b == nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error { return fn(string(k), v) })
}

// PutGroupVote writes a vote of a group.
func (tx *Tx) PutGroupVote(groupID, voteID string, doc []byte) error {
	return tx.putGroupChild(bucketGroupVotes, groupID, voteID, doc)
}

// GroupVote reads a vote; ErrNotFound if there is none.
func (tx *Tx) GroupVote(groupID, voteID string) ([]byte, error) {
	return tx.groupChild(bucketGroupVotes, groupID, voteID)
}

// GroupVotes calls fn with every vote of a group ("" : of every group) in
// key order.
func (tx *Tx) GroupVotes(groupID string, fn func(groupID, voteID string, doc []byte) error) error {
	return tx.eachGroupChild(bucketGroupVotes, groupID, fn)
}

// PutGroupTask writes a group task.
func (tx *Tx) PutGroupTask(groupID, taskID string, doc []byte) error {
	return tx.putGroupChild(bucketGroupTasks, groupID, taskID, doc)
}

// GroupTask reads a group task; ErrNotFound if there is none.
func (tx *Tx) GroupTask(groupID, taskID string) ([]byte, error) {
	return tx.groupChild(bucketGroupTasks, groupID, taskID)
}

// GroupTasks calls fn with every task of a group ("": of every group) in
// key order.
func (tx *Tx) GroupTasks(groupID string, fn func(groupID, taskID string, doc []byte) error) error {
	return tx.eachGroupChild(bucketGroupTasks, groupID, fn)
}

func (tx *Tx) putGroupChild(bucket []byte, groupID, id string, doc []byte) error {
	k, err := groupChildKey(groupID, id)
	if err != nil {
		return err
	}
	b, err := tx.bucket(bucket)
	if err != nil {
		return err
	}
	return putDoc(b, k, doc)
}

func (tx *Tx) groupChild(bucket []byte, groupID, id string) ([]byte, error) {
	k, err := groupChildKey(groupID, id)
	if err != nil {
		return nil, ErrNotFound
	}
	b, err := tx.bucket(bucket)
	if err != nil {
		return nil, err
	}
	return getDoc(b, k)
}

func (tx *Tx) eachGroupChild(bucket []byte, groupID string, fn func(groupID, id string, doc []byte) error) error {
	b, err := tx.bucket(bucket)
	if err != nil || b == nil {
		return err
	}
	var prefix []byte
	if groupID != "" {
		prefix = append([]byte(groupID), 0)
	}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		g, id, ok := bytes.Cut(k, []byte{0})
		if !ok {
			continue
		}
		if err := fn(string(g), string(id), v); err != nil {
			return err
		}
	}
	return nil
}

// AppendGroupEvent adds an event to a group's log: build gets the event's
// seq and returns its JSON. An event id already in the log is not added
// again: dup is true and seq is the stored event's. Beyond keep events the
// oldest are dropped (keep ≤ 0 keeps all).
func (tx *Tx) AppendGroupEvent(groupID, eventID string, keep int, build func(seq uint64) ([]byte, error)) (seq uint64, dup bool, err error) {
	ik, err := groupChildKey(groupID, eventID)
	if err != nil {
		return 0, false, err
	}
	ids, err := tx.bucket(bucketGroupEventIDs)
	if err != nil {
		return 0, false, err
	}
	if v := ids.Get(ik); len(v) == 8 {
		return binary.BigEndian.Uint64(v), true, nil
	}
	top, err := tx.bucket(bucketGroupEvents)
	if err != nil {
		return 0, false, err
	}
	evs, err := top.CreateBucketIfNotExists([]byte(groupID))
	if err != nil {
		return 0, false, err
	}
	seq, err = evs.NextSequence()
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
	if err := evs.Put(sk, append(append([]byte(eventID), 0), doc...)); err != nil {
		return 0, false, err
	}
	if err := ids.Put(ik, sk); err != nil {
		return 0, false, err
	}
	if keep > 0 && seq > uint64(keep) {
		if err := dropEventsUpTo(evs, ids, groupID, seq-uint64(keep)); err != nil {
			return 0, false, err
		}
	}
	return seq, false, nil
}

// dropEventsUpTo deletes the events of a group with seq ≤ last.
func dropEventsUpTo(evs, ids *bucket, groupID string, last uint64) error {
	c := evs.Cursor()
	// Each round deletes the first event: bounded by the bucket.
	for k, v := c.First(); len(k) == 8 && binary.BigEndian.Uint64(k) <= last; k, v = c.First() {
		id, _, _ := bytes.Cut(v, []byte{0})
		if err := ids.Delete(append(append([]byte(groupID), 0), id...)); err != nil {
			return err
		}
		if err := evs.Delete(bytes.Clone(k)); err != nil {
			return err
		}
	}
	return nil
}

// GroupEvents returns up to limit events of a group with seq > after, in
// order.
func (tx *Tx) GroupEvents(groupID string, after uint64, limit int) ([]GroupEvent, error) {
	if limit <= 0 {
		limit = 100
	}
	top, err := tx.bucket(bucketGroupEvents)
	if err != nil || top == nil {
		return nil, err
	}
	evs := top.Bucket([]byte(groupID))
	if evs == nil {
		return nil, nil
	}
	var out []GroupEvent
	c := evs.Cursor()
	for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, after+1)); k != nil && len(out) < limit; k, v = c.Next() {
		if len(k) != 8 {
			continue
		}
		id, doc, ok := bytes.Cut(v, []byte{0})
		if !ok {
			return nil, fmt.Errorf("group %s event %d: malformed record", groupID, binary.BigEndian.Uint64(k))
		}
		out = append(out, GroupEvent{Seq: binary.BigEndian.Uint64(k), ID: string(id), Doc: bytes.Clone(doc)})
	}
	return out, nil
}

// LastGroupEvent is the seq of a group's newest event (0 when none).
func (tx *Tx) LastGroupEvent(groupID string) uint64 {
	top, err := tx.bucket(bucketGroupEvents)
	if err != nil || top == nil {
		return 0
	}
	evs := top.Bucket([]byte(groupID))
	if evs == nil {
		return 0
	}
	return evs.Sequence()
}

// DeleteGroupVote deletes a vote (no error when it is not there).
func (tx *Tx) DeleteGroupVote(groupID, voteID string) error {
	return tx.deleteGroupChild(bucketGroupVotes, groupID, voteID)
}

// DeleteGroupTask deletes a group task (no error when it is not there).
func (tx *Tx) DeleteGroupTask(groupID, taskID string) error {
	return tx.deleteGroupChild(bucketGroupTasks, groupID, taskID)
}

func (tx *Tx) deleteGroupChild(bucket []byte, groupID, id string) error {
	k, err := groupChildKey(groupID, id)
	if err != nil {
		return err
	}
	b, err := tx.bucket(bucket)
	if err != nil {
		return err
	}
	return b.Delete(k)
}

// DeleteGroup deletes a group's record with its votes, tasks and events.
func (tx *Tx) DeleteGroup(groupID string) error {
	if err := groupKeyPart(groupID); err != nil {
		return err
	}
	b, err := tx.bucket(bucketGroups)
	if err != nil {
		return err
	}
	if err := b.Delete([]byte(groupID)); err != nil {
		return err
	}
	prefix := append([]byte(groupID), 0)
	for _, name := range [][]byte{bucketGroupVotes, bucketGroupTasks, bucketGroupEventIDs} {
		b, err := tx.bucket(name)
		if err != nil {
			return err
		}
		c := b.Cursor()
		// Each round deletes the first key with the prefix: bounded.
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
			if err := b.Delete(bytes.Clone(k)); err != nil {
				return err
			}
		}
	}
	top, err := tx.bucket(bucketGroupEvents)
	if err != nil {
		return err
	}
	if top.Bucket([]byte(groupID)) != nil {
		return top.DeleteBucket([]byte(groupID))
	}
	return nil
}
