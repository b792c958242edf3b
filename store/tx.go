package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/store/kv"
	"github.com/synapse-edge/synapse/store/taskpeek"
	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

// Tx is a read or write transaction with typed accessors.
type Tx struct {
	v *kv.View
	// db is set in the writer's transactions; deferred are the retention
	// index entries of this transaction not written yet, flushedDeferred
	// how many of them flushFinished wrote, flushedPending whether it
	// wrote the writer's waiting ones (finished.go).
	db              *DB
	deferred        [][]byte
	flushedDeferred int
	flushedPending  bool
	onCommit        []func()
}

func (tx *Tx) b(name []byte) *bucket { return tx.root(name) }

func getJSON(b *bucket, key []byte, v any) error {
	raw := b.Get(key)
	if raw == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode record %q: %w", key, err)
	}
	return nil
}

func putJSON(b *bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record %q: %w", key, err)
	}
	return b.Put(key, raw)
}

func beTime(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano()))
}

// ---- tasks ----

// PutTask writes t. When t is terminal it is added to the retention index.
func (tx *Tx) PutTask(t *wire.Task) error {
	rec, err := EncodeTask(t, nil)
	if err != nil {
		return err
	}
	return tx.PutRecord(rec)
}

// CreateTask writes a new task and fails with ErrExists if its id is taken.
func (tx *Tx) CreateTask(t *wire.Task) error {
	rec, err := EncodeTask(t, nil)
	if err != nil {
		return err
	}
	return tx.CreateRecord(rec)
}

// Task reads one task.
func (tx *Tx) Task(id string) (*wire.Task, error) {
	raw := tx.b(bucketTasks).Get([]byte(id))
	if raw == nil {
		return nil, ErrNotFound
	}
	t := new(wire.Task)
	if err := decodeTask(id, raw, t); err != nil {
		return nil, fmt.Errorf("decode task %q: %w", id, err)
	}
	return t, nil
}

// TaskFilter selects tasks in ListTasks.
type TaskFilter struct {
	Status   wire.Status
	TaskType string
	// After is the id to continue after (a page token); tasks are listed
	// newest first, and ids are UUID v7 so that is id order, descending.
	After string
	Limit int
	// NonTerminal keeps only tasks that have not reached a final state.
	NonTerminal bool
}

// ListTasks returns up to f.Limit matching tasks, newest first, and the id to
// continue after ("" when there are no more).
func (tx *Tx) ListTasks(f TaskFilter) ([]*wire.Task, string, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	c := tx.b(bucketTasks).Cursor()
	var k, v []byte
	if f.After != "" {
		k, v = c.Seek([]byte(f.After))
		if k == nil {
			k, v = c.Last()
		}
		for k != nil && bytes.Compare(k, []byte(f.After)) >= 0 {
			k, v = c.Prev()
		}
	} else {
		k, v = c.Last()
	}
	var out []*wire.Task
	for ; k != nil; k, v = c.Prev() {
		if f.NonTerminal && finalRecord(v) {
			continue // the start's scan of every task: no decode
		}
		t := new(wire.Task)
		if err := decodeTask(string(k), v, t); err != nil {
			return nil, "", fmt.Errorf("decode task %q: %w", k, err)
		}
		if f.Status != "" && t.Status != f.Status {
			continue
		}
		if f.TaskType != "" && t.Type != f.TaskType {
			continue
		}
		if f.NonTerminal && t.Status.Terminal() {
			continue
		}
		if len(out) == f.Limit {
			return out, out[len(out)-1].ID, nil
		}
		out = append(out, t)
	}
	return out, "", nil
}

// finalRecord tells, without decoding it, that a task record is of a
// final task (false when it cannot tell): a JSON record (schema ≤ 7) by a
// peek at its status, a compact one by decoding it.
func finalRecord(v []byte) bool {
	if len(v) > 0 && (v[0] == taskrec.Compact || v[0] == taskrec.CompactClosed) {
		// The compact layout decodes without reflection or a JSON scan.
		st, err := taskrec.Status("", v)
		return err == nil && st.Terminal()
	}
	raw, _, err := taskrec.Split(v)
	st, ok := taskpeek.Status(raw)
	return err == nil && ok && wire.Status(st).Terminal()
}

// CountTasks counts all task records.
func (tx *Tx) CountTasks() int { return tx.b(bucketTasks).KeyN() }

// CountTasksByStatus counts the task records by status.
func (tx *Tx) CountTasksByStatus() (map[wire.Status]int, error) {
	out := map[wire.Status]int{}
	err := tx.b(bucketTasks).ForEach(func(k, v []byte) error {
		st, err := taskrec.Status(string(k), v)
		if err != nil {
			return fmt.Errorf("decode task %q: %w", k, err)
		}
		out[st]++
		return nil
	})
	return out, err
}

// ---- events ----

func eventKey(taskID string, seq uint64) []byte {
	k := make([]byte, 0, len(taskID)+9)
	k = append(k, taskID...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, seq)
}

// AppendEvent writes one task event to the events bucket; events kept in
// the task's record take no more after it (record.go).
func (tx *Tx) AppendEvent(e *wire.Event) error {
	raw, err := wire.AppendEventJSON(nil, e, true)
	if err != nil {
		return fmt.Errorf("encode event %s/%d: %w", e.TaskID, e.Seq, err)
	}
	tasks := tx.b(bucketTasks)
	if rec := tasks.Get([]byte(e.TaskID)); taskrec.Open(rec) {
		if err := tasks.Put([]byte(e.TaskID), taskrec.Closed(rec)); err != nil {
			return err
		}
	}
	return tx.b(bucketEvents).Put(eventKey(e.TaskID, e.Seq), raw)
}

// Events returns the events of a task with seq > after, in order, at most limit
// (0 = all): first those kept in the task's record (schema 4: the events
// it was created with), then those of the events bucket. A record there
// holds one event, or (schema 2) a JSON array of the consecutive events
// of one write, under the key of its first.
func (tx *Tx) Events(taskID string, after uint64, limit int) ([]*wire.Event, error) {
	var out []*wire.Event
	full := func() bool { return limit > 0 && len(out) >= limit }
	if rec := tx.b(bucketTasks).Get([]byte(taskID)); rec != nil {
		var err error
		if out, err = taskrec.KeptEvents(taskID, rec, after, limit, out); err != nil {
			return nil, fmt.Errorf("decode task %q: %w", taskID, err)
		}
		if full() {
			return out, nil
		}
	}
	prefix := append([]byte(taskID), 0)
	b := tx.b(bucketEvents)
	start := eventKey(taskID, after+1)
	// The record before start may be a group that reaches past after.
	pc := b.Cursor()
	pk, pv := pc.Seek(start)
	if pk == nil {
		pk, pv = pc.Last()
	} else {
		pk, pv = pc.Prev()
	}
	if pk != nil && bytes.HasPrefix(pk, prefix) && len(pv) > 0 && pv[0] == '[' {
		var err error
		if out, err = appendEvents(out, pk, pv, after, limit); err != nil {
			return nil, err
		}
	}
	c := b.Cursor()
	for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix) && !full(); k, v = c.Next() {
		var err error
		if out, err = appendEvents(out, k, v, after, limit); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendEvents decodes one event record (an event or a group of them) and
// appends those with seq > after, up to limit (0 = all) events in out.
func appendEvents(out []*wire.Event, k, v []byte, after uint64, limit int) ([]*wire.Event, error) {
	if len(v) > 0 && v[0] == '[' {
		var group []*wire.Event
		if err := json.Unmarshal(v, &group); err != nil {
			return nil, fmt.Errorf("decode events %q: %w", k, err)
		}
		for _, e := range group {
			if limit > 0 && len(out) >= limit {
				break
			}
			if e.Seq > after {
				out = append(out, e)
			}
		}
		return out, nil
	}
	e := new(wire.Event)
	if err := json.Unmarshal(v, e); err != nil {
		return nil, fmt.Errorf("decode event %q: %w", k, err)
	}
	if e.Seq > after {
		out = append(out, e)
	}
	return out, nil
}

// ---- retention ----

// PruneFinished deletes finished tasks (and their events) that finished
// before olderThan, and then the oldest ones beyond keep, looking at most at
// max index entries per call. It returns how many tasks it deleted.
func (tx *Tx) PruneFinished(olderThan time.Time, keep, max int) (int, error) {
	if err := tx.flushFinished(); err != nil {
		return 0, err
	}
	fin := tx.b(bucketFinished)
	total := fin.KeyN()
	cut := beTime(olderThan)
	c := fin.Cursor()
	seen, n := 0, 0
	for k, _ := c.First(); k != nil && seen < max; k, _ = c.First() {
		if bytes.Compare(k[:8], cut) >= 0 && total-seen <= keep {
			break
		}
		deleted, err := tx.deleteTask(string(k[8:]))
		if err != nil {
			return n, err
		}
		if err := fin.Delete(k); err != nil {
			return n, err
		}
		seen++
		if deleted {
			n++
		}
	}
	return n, nil
}

// deleteTask deletes a finished task and its events; it reports false when
// the task is gone already or is live again (then it is not ours to delete).
func (tx *Tx) deleteTask(id string) (bool, error) {
	t, err := tx.Task(id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !t.Status.Terminal() {
		return false, nil
	}
	if err := tx.b(bucketTasks).Delete([]byte(id)); err != nil {
		return false, err
	}
	prefix := append([]byte(id), 0)
	ev := tx.b(bucketEvents)
	c := ev.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := ev.Delete(k); err != nil {
			return false, err
		}
	}
	return true, tx.deletePushConfigs(id)
}
