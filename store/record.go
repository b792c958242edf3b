package store

import (
	"encoding/binary"
	"fmt"

	"github.com/synapse-edge/synapse/wire"
)

// A task record (bucket tasks) is the task's JSON, or, since schema 4, the
// task's JSON followed by the events written with it:
//
//	marker  len(task JSON) uint32 BE  task JSON  events JSON array
//
// A task created with its events (a sync-mode echo is created final with
// its five) then dirties one B+tree instead of two: its events sit next to
// it instead of in the events bucket, whose path to the root would be
// copied and written as well. Later writes add their events to the array
// while it stays under keptMax (marker recWithEvents, schema 6); once one
// does not fit, the marker becomes recKeptClosed and this and every later
// write's events go to the events bucket, so the array always holds the
// first events. A record that starts with '{' is plain JSON (schemas 1
// to 3).
const (
	recWithEvents = 0x01
	recKeptClosed = 0x02
	recHeaderLen  = 5
	keptMax       = 4096
)

// keptMarker reports whether a task record has events kept with it.
func keptMarker(v []byte) bool {
	return len(v) > 0 && (v[0] == recWithEvents || v[0] == recKeptClosed)
}

// splitTaskRecord returns the task JSON of a record and the events JSON
// array kept with it (nil when there is none).
func splitTaskRecord(v []byte) (task, events []byte, err error) {
	if !keptMarker(v) {
		return v, nil, nil
	}
	if len(v) < recHeaderLen {
		return nil, nil, fmt.Errorf("task record of %d bytes: truncated header", len(v))
	}
	n := binary.BigEndian.Uint32(v[1:recHeaderLen])
	if uint64(n) > uint64(len(v)-recHeaderLen) {
		return nil, nil, fmt.Errorf("task record of %d bytes declares %d bytes of task", len(v), n)
	}
	end := recHeaderLen + int(n)
	return v[recHeaderLen:end], v[end:], nil
}

// TaskRecord is a task's new state and its new events, encoded before the
// write: callers encode in their own goroutines, and the store's single
// writer only copies the bytes into pages.
type TaskRecord struct {
	task *wire.Task
	// buf is the record header, the task's JSON (from recHeaderLen to
	// taskEnd), then the events: one JSON array of them (grouped), or
	// each event's key and JSON (spans).
	buf     []byte
	taskEnd int
	grouped bool
	// groupTask and groupSeq key a group in the events bucket.
	groupTask string
	groupSeq  uint64
	spans     []recordSpan
	spansArr  [6]recordSpan
}

// recordSpan locates one event's key and value in buf.
type recordSpan struct{ key, val, end int }

// EncodeTask encodes t and evs (events of t) for PutRecord or CreateRecord.
// Neither may change until the write is committed.
func EncodeTask(t *wire.Task, evs []*wire.Event) (*TaskRecord, error) {
	size := recHeaderLen + 400 + 2*(len(t.Payload)+len(t.Result)) + 64*len(t.History)
	for _, e := range evs {
		size += 160 + len(e.Data)
	}
	r := &TaskRecord{task: t, buf: make([]byte, recHeaderLen, size)}
	r.buf[0] = recWithEvents
	var err error
	if r.buf, err = wire.AppendTaskJSON(r.buf, t, true); err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	r.taskEnd = len(r.buf)
	binary.BigEndian.PutUint32(r.buf[1:recHeaderLen], uint32(r.taskEnd-recHeaderLen))
	r.spans = r.spansArr[:0]
	if r.grouped = grouped(evs); r.grouped {
		r.groupTask, r.groupSeq = evs[0].TaskID, evs[0].Seq
		// One JSON array for the events of this write: kept with the
		// task when it is created, else one events record under the key
		// of the first (Events reads both).
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
		r.spans = append(r.spans, recordSpan{key: -1, val: r.taskEnd, end: len(r.buf)})
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

// grouped reports whether evs go into one record: at least one, all of
// one task, with consecutive sequence numbers.
func grouped(evs []*wire.Event) bool {
	if len(evs) == 0 {
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
// the retention index. Events kept with the task stay with it; this
// write's join them while they fit.
func (tx *Tx) PutRecord(r *TaskRecord) error {
	t := r.task
	tasks := tx.b(bucketTasks)
	// The slices are capped so that nothing bbolt does with one can reach
	// the next.
	val := r.buf[recHeaderLen:r.taskEnd:r.taskEnd]
	if old := tasks.Get([]byte(t.ID)); keptMarker(old) {
		_, kept, err := splitTaskRecord(old)
		if err != nil {
			return fmt.Errorf("task %s: %w", t.ID, err)
		}
		var group []byte
		if r.grouped {
			group = r.buf[r.spans[0].val:r.spans[0].end]
		}
		if old[0] == recWithEvents && group != nil && len(kept)+len(group) <= keptMax && len(kept) > 2 && kept[len(kept)-1] == ']' {
			val = make([]byte, 0, r.taskEnd+len(kept)+len(group))
			val = append(append(val, r.buf[:r.taskEnd]...), kept[:len(kept)-1]...)
			val = append(append(val, ','), group[1:]...)
			if err := tasks.Put([]byte(t.ID), val); err != nil {
				return err
			}
			return tx.finished(t)
		}
		val = make([]byte, 0, r.taskEnd+len(kept))
		val = append(append(val, r.buf[:r.taskEnd]...), kept...)
		val[0] = old[0]
		if len(r.spans) > 0 {
			val[0] = recKeptClosed
		}
	}
	if err := tasks.Put([]byte(t.ID), val); err != nil {
		return err
	}
	return tx.putEvents(r)
}

// CreateRecord writes a new task with its events kept in its record; it
// fails with ErrExists if the id is taken.
func (tx *Tx) CreateRecord(r *TaskRecord) error {
	t := r.task
	tasks := tx.b(bucketTasks)
	if tasks.Get([]byte(t.ID)) != nil {
		return fmt.Errorf("task %s: %w", t.ID, ErrExists)
	}
	if !r.grouped {
		if err := tasks.Put([]byte(t.ID), r.buf[recHeaderLen:r.taskEnd:r.taskEnd]); err != nil {
			return err
		}
		return tx.putEvents(r)
	}
	end := r.spans[0].end
	if err := tasks.Put([]byte(t.ID), r.buf[:end:end]); err != nil {
		return err
	}
	if !t.Status.Terminal() {
		return nil
	}
	return tx.deferFinished(t) // finished.go
}

// putEvents writes r's events to the events bucket and indexes a terminal
// task.
func (tx *Tx) putEvents(r *TaskRecord) error {
	if len(r.spans) > 0 {
		ev := tx.b(bucketEvents)
		for _, s := range r.spans {
			var key []byte
			if s.key < 0 { // a group: its key is its first event's
				key = eventKey(r.groupTask, r.groupSeq)
			} else {
				key = r.buf[s.key:s.val:s.val]
			}
			if err := ev.Put(key, r.buf[s.val:s.end:s.end]); err != nil {
				return err
			}
		}
	}
	return tx.finished(r.task)
}

// finished adds t to the retention index when it is terminal.
func (tx *Tx) finished(t *wire.Task) error {
	if !t.Status.Terminal() {
		return nil
	}
	k := append(beTime(t.UpdatedAt), t.ID...)
	return tx.b(bucketFinished).Put(k, nil)
}
