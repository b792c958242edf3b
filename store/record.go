package store

import (
	"encoding/binary"
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// TaskRecord is a task's new state and its new events, encoded before the
// write: callers encode in their own goroutines, and the store's single
// writer only copies the bytes into pages. The records are those PutTask
// and AppendEvent write (the same JSON).
type TaskRecord struct {
	task     *wire.Task
	buf      []byte // the task's JSON, then each event's key and JSON
	taskEnd  int
	spans    []recordSpan
	spansArr [6]recordSpan
}

// recordSpan locates one event's key and value in buf.
type recordSpan struct{ key, val, end int }

// EncodeTask encodes t and evs (events of t) for PutRecord or CreateRecord.
// Neither may change until the write is committed.
func EncodeTask(t *wire.Task, evs []*wire.Event) (*TaskRecord, error) {
	size := 400 + 2*(len(t.Payload)+len(t.Result)) + 64*len(t.History)
	for _, e := range evs {
		size += 160 + len(e.Data)
	}
	r := &TaskRecord{task: t, buf: make([]byte, 0, size)}
	var err error
	if r.buf, err = wire.AppendTaskJSON(r.buf, t, true); err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	r.taskEnd = len(r.buf)
	r.spans = r.spansArr[:0]
	if grouped(evs) {
		// One record for the events of this write (Events reads it):
		// one put instead of one per event.
		s := recordSpan{key: len(r.buf)}
		r.buf = append(r.buf, evs[0].TaskID...)
		r.buf = append(r.buf, 0)
		r.buf = binary.BigEndian.AppendUint64(r.buf, evs[0].Seq)
		s.val = len(r.buf)
		r.buf = append(r.buf, '[')
		for i, e := range evs {
			if i > 0 {
				r.buf = append(r.buf, ',')
			}
			if r.buf, err = wire.AppendEventJSON(r.buf, e, true); err != nil {
				return nil, fmt.Errorf("encode event %s/%d: %w", e.TaskID, e.Seq, err)
			}
		}
		r.buf = append(r.buf, ']')
		s.end = len(r.buf)
		r.spans = append(r.spans, s)
		return r, nil
	}
	for _, e := range evs {
		s := recordSpan{key: len(r.buf)}
		r.buf = append(r.buf, e.TaskID...)
		r.buf = append(r.buf, 0)
		r.buf = binary.BigEndian.AppendUint64(r.buf, e.Seq)
		s.val = len(r.buf)
		if r.buf, err = wire.AppendEventJSON(r.buf, e, true); err != nil {
			return nil, fmt.Errorf("encode event %s/%d: %w", e.TaskID, e.Seq, err)
		}
		s.end = len(r.buf)
		r.spans = append(r.spans, s)
	}
	return r, nil
}

// grouped reports whether evs go into one record: more than one, of one
// task, with consecutive sequence numbers.
func grouped(evs []*wire.Event) bool {
	if len(evs) < 2 {
		return false
	}
	for i, e := range evs[1:] {
		if e.TaskID != evs[0].TaskID || e.Seq != evs[i].Seq+1 {
			return false
		}
	}
	return true
}

// PutRecord writes the task and its events. A terminal task is added to
// the retention index.
func (tx *Tx) PutRecord(r *TaskRecord) error {
	t := r.task
	// The slices are capped so that nothing bbolt does with one can reach
	// the next.
	if err := tx.b(bucketTasks).Put([]byte(t.ID), r.buf[:r.taskEnd:r.taskEnd]); err != nil {
		return err
	}
	if len(r.spans) > 0 {
		ev := tx.b(bucketEvents)
		for _, s := range r.spans {
			if err := ev.Put(r.buf[s.key:s.val:s.val], r.buf[s.val:s.end:s.end]); err != nil {
				return err
			}
		}
	}
	if t.Status.Terminal() {
		k := append(beTime(t.UpdatedAt), t.ID...)
		return tx.b(bucketFinished).Put(k, nil)
	}
	return nil
}

// CreateRecord is PutRecord for a new task: it fails with ErrExists if the
// id is taken.
func (tx *Tx) CreateRecord(r *TaskRecord) error {
	if tx.b(bucketTasks).Get([]byte(r.task.ID)) != nil {
		return fmt.Errorf("task %s: %w", r.task.ID, ErrExists)
	}
	return tx.PutRecord(r)
}
