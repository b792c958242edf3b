package store

import (
	"fmt"

	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

// A task record (bucket tasks) is the task and the first events of it,
// in the layouts of package taskrec (record.go there): JSON up to schema
// 7, a compact binary layout since schema 8. Later writes add their
// events to those kept while they fit (taskrec.KeptMax); once one does
// not, the record is closed and this and every later write's events go
// to the events bucket.

// TaskRecord is a task's new state and its new events, encoded before the
// write (EncodeTask) in the caller's goroutine.
type TaskRecord = taskrec.Record

// EncodeTask encodes t and evs (events of t) for PutRecord or CreateRecord.
// Neither may change until the write is committed.
func EncodeTask(t *wire.Task, evs []*wire.Event) (*TaskRecord, error) { return taskrec.Encode(t, evs) }

// decodeTask decodes the task of the record rec of id into t.
func decodeTask(id string, rec []byte, t *wire.Task) error {
	_, err := taskrec.Decode(id, rec, t)
	return err
}

// PutRecord writes the task and its events. A terminal task is added to
// the retention index. Events kept with the task stay with it; this
// write's join them while they fit.
func (tx *Tx) PutRecord(r *TaskRecord) error {
	id := []byte(r.Task.ID)
	tasks := tx.b(bucketTasks)
	old := tasks.Get(id)
	if !taskrec.Kept(old) { // no events kept: to the events bucket
		if err := tasks.Put(id, r.Alone()); err != nil {
			return err
		}
		return tx.putEvents(r)
	}
	// The kept events are written again with the new state (the compact
	// layout derives some of them from the task).
	kept, err := taskrec.KeptEvents(r.Task.ID, old, 0, 0, nil)
	if err != nil {
		return fmt.Errorf("task %s: %w", r.Task.ID, err)
	}
	open := taskrec.Open(old)
	if open && r.Grouped {
		val, n, err := r.With(append(kept[:len(kept):len(kept)], r.Events...))
		if err != nil {
			return fmt.Errorf("task %s: %w", r.Task.ID, err)
		}
		if n <= taskrec.KeptMax {
			if err := tasks.Put(id, val); err != nil {
				return err
			}
			return tx.finished(r.Task)
		}
	}
	val, _, err := r.With(kept)
	if err != nil {
		return fmt.Errorf("task %s: %w", r.Task.ID, err)
	}
	if !open || len(r.Events) > 0 {
		val[0]++ // the closed marker of its layout
	}
	if err := tasks.Put(id, val); err != nil {
		return err
	}
	return tx.putEvents(r)
}

// CreateRecord writes a new task with its events kept in its record; it
// fails with ErrExists if the id is taken.
func (tx *Tx) CreateRecord(r *TaskRecord) error {
	t := r.Task
	tasks := tx.b(bucketTasks)
	if tasks.Get([]byte(t.ID)) != nil {
		return fmt.Errorf("task %s: %w", t.ID, ErrExists)
	}
	if err := tasks.Put([]byte(t.ID), r.Created()); err != nil {
		return err
	}
	if !r.Grouped {
		return tx.putEvents(r)
	}
	if !t.Status.Terminal() {
		return nil
	}
	return tx.deferFinished(t) // finished.go
}

// putEvents writes r's events to the events bucket (JSON: one record of
// them when they are grouped, else one each) and indexes a terminal
// task.
func (tx *Tx) putEvents(r *TaskRecord) error {
	ev := tx.b(bucketEvents)
	for i, e := range r.Events {
		var v []byte
		var err error
		if r.Grouped {
			v, err = taskrec.AppendEventsJSON(nil, r.Events)
		} else {
			v, err = wire.AppendEventJSON(nil, e, true)
		}
		if err != nil {
			return fmt.Errorf("encode event %s/%d: %w", e.TaskID, e.Seq, err)
		}
		if err := ev.Put(eventKey(e.TaskID, e.Seq), v); err != nil {
			return err
		}
		if r.Grouped && i == 0 {
			break
		}
	}
	return tx.finished(r.Task)
}

// finished adds t to the retention index when it is terminal.
func (tx *Tx) finished(t *wire.Task) error {
	if !t.Status.Terminal() {
		return nil
	}
	k := append(beTime(t.UpdatedAt), t.ID...)
	return tx.b(bucketFinished).Put(k, nil)
}
