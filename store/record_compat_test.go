package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/store/taskrec"
	"github.com/synapse-edge/synapse/wire"
)

// A file of schema 2 (plain task records, events in the events bucket,
// single or grouped) opens under the current schema and reads as it did, and writes
// after that keep working on the old records.
func TestSchema2FileReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	const id = "0190a6b2-0000-7000-8000-000000000001"
	task := `{"task_id":"` + id + `","task_type":"echo","status":"executing","progress":0,"payload":{},` +
		`"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","seq":3,` +
		`"history":[{"from":"idle","status":"executing","at":"2026-01-01T00:00:00Z"}]}`
	ev := func(seq int) string {
		return `{"task_id":"` + id + `","seq":` + string(rune('0'+seq)) + `,"event_type":"log","at":"2026-01-01T00:00:00Z","data":{"n":` + string(rune('0'+seq)) + `}}`
	}
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(btx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := btx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint32(nil, 2)); err != nil {
			return err
		}
		if err := btx.Bucket(bucketTasks).Put([]byte(id), []byte(task)); err != nil {
			return err
		}
		evb := btx.Bucket(bucketEvents)
		if err := evb.Put(eventKey(id, 1), []byte(ev(1))); err != nil {
			return err
		}
		return evb.Put(eventKey(id, 2), []byte("["+ev(2)+","+ev(3)+"]"))
	})
	if err == nil {
		err = bdb.Close()
	}
	if err != nil {
		t.Fatal(err)
	}

	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open of a schema 2 file: %v", err)
	}
	defer db.Close(context.Background())
	seqs := func() []uint64 {
		t.Helper()
		var out []uint64
		if err := db.View(func(tx *Tx) error {
			evs, err := tx.Events(id, 0, 0)
			for _, e := range evs {
				out = append(out, e.Seq)
			}
			return err
		}); err != nil {
			t.Fatalf("Events: %v", err)
		}
		return out
	}
	if got := seqs(); len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("events of the old task = %v, want 1 2 3", got)
	}
	var got *wire.Task
	if err := db.View(func(tx *Tx) error { got, err = tx.Task(id); return err }); err != nil || got.Status != wire.StatusExecuting {
		t.Fatalf("Task = %+v, %v", got, err)
	}
	// Completing it writes a plain record and a group in the events bucket.
	got.Status, got.Seq = wire.StatusCompleted, 4
	got.History = append(got.History, wire.Transition{From: wire.StatusExecuting, Status: wire.StatusCompleted, At: got.History[0].At})
	done := &wire.Event{TaskID: id, Seq: 4, Type: wire.EventLog, At: got.History[0].At, Data: wire.JSONValue(`{"n":4}`)}
	if err := db.Update(context.Background(), func(tx *Tx) error {
		rec, err := EncodeTask(got, []*wire.Event{done})
		if err != nil {
			return err
		}
		return tx.PutRecord(rec)
	}); err != nil {
		t.Fatalf("PutRecord: %v", err)
	}
	if got := seqs(); len(got) != 4 || got[3] != 4 {
		t.Fatalf("events after completing = %v, want 1 2 3 4", got)
	}
	rep, err := db.Check(context.Background())
	if err != nil || !rep.OK || rep.SchemaVersion != SchemaVersion || rep.Tasks != 1 {
		t.Fatalf("Check = %+v, %v; want OK, schema %d, 1 task", rep, err, SchemaVersion)
	}
}

// A task record whose header is cut or lies about its length is an error
// for every reader and for Check, never a panic or a silent success.
func TestTaskRecordHostile(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	bad := map[string][]byte{
		"0190a6b2-0000-7000-8000-00000000000a": {taskrec.WithEvents},
		"0190a6b2-0000-7000-8000-00000000000b": {taskrec.WithEvents, 0, 0, 0},
		"0190a6b2-0000-7000-8000-00000000000c": {taskrec.WithEvents, 0, 0, 1, 0, '{', '}'},
		"0190a6b2-0000-7000-8000-00000000000d": append([]byte{taskrec.WithEvents, 0xff, 0xff, 0xff, 0xff}, "{}"...),
		"0190a6b2-0000-7000-8000-00000000000e": append([]byte{taskrec.WithEvents, 0, 0, 0, 2}, "{}[{]"...),
		// The compact layout (schema 8): cut, lying, trailing bytes, a
		// bad event.
		"0190a6b2-0000-7000-8000-00000000000f": {taskrec.Compact, 0, 0, 0},
		"0190a6b2-0000-7000-8000-000000000010": {taskrec.Compact, 0, 0, 0, 3, 0, 4, 'e'},
		"0190a6b2-0000-7000-8000-000000000011": append([]byte{taskrec.CompactClosed, 0, 0, 0, 0xff}, 1, 2, 3),
		"0190a6b2-0000-7000-8000-000000000012": compactWith(t, []byte{0xff}),
		"0190a6b2-0000-7000-8000-000000000013": compactWith(t, []byte{1, 9, 0}),
	}
	if err := db.Update(context.Background(), func(tx *Tx) error {
		for id, v := range bad {
			if err := tx.b(bucketTasks).Put([]byte(id), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range bad {
		err := db.View(func(tx *Tx) error {
			if _, err := tx.Task(id); err != nil {
				return err
			}
			_, err := tx.Events(id, 0, 0)
			return err
		})
		if err == nil {
			t.Errorf("task %s: reading a bad record succeeded", id)
		}
	}
	if err := db.View(func(tx *Tx) error { _, _, err := tx.ListTasks(TaskFilter{}); return err }); err == nil {
		t.Error("ListTasks over bad records succeeded")
	}
	rep, err := db.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for id := range bad {
		if !strings.Contains(strings.Join(rep.Errors, "\n"), id) {
			t.Errorf("Check does not report task %s: %q", id, rep.Errors)
		}
	}
}

// compactWith is a good compact record of a small task with events
// bytes after it.
func compactWith(t *testing.T, events []byte) []byte {
	t.Helper()
	r, err := EncodeTask(&wire.Task{ID: "x", Type: "echo", Status: wire.StatusPending, History: []wire.Transition{{Status: wire.StatusPending}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := r.Alone()
	if v[0] != taskrec.CompactClosed {
		t.Fatalf("EncodeTask wrote marker %d, want the compact layout", v[0])
	}
	v[0] = taskrec.Compact
	return append(v, events...)
}

// A file of schema 7 (task records of JSON with their events kept, open
// or closed) opens under schema 8 and later and reads as it did; a write of a new
// state turns the record into the compact layout with the events it
// kept, which read back the same, and Check is clean.
func TestSchema7FileReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	mk := func(id string) (*wire.Task, []*wire.Event) {
		task := &wire.Task{ID: id, Type: "echo", Status: wire.StatusConfirmed, Payload: wire.JSONValue(`{"a":"<b>"}`),
			Owner: "admin", CreatedAt: at, UpdatedAt: at, Seq: 2,
			History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusPending, At: wire.Time{Time: at}, Reason: "submitted"},
				{From: wire.StatusPending, Status: wire.StatusConfirmed, At: wire.Time{Time: at}, Reason: "accepted"}}}
		var evs []*wire.Event
		for i, h := range task.History {
			evs = append(evs, &wire.Event{TaskID: id, Seq: uint64(i + 1), Type: wire.EventStatus, At: h.At,
				Data: wire.StatusEventJSON(&wire.StatusEventData{From: h.From, Message: h.Reason, Status: h.Status, TaskID: id})})
		}
		return task, evs
	}
	const open, closed = "0190a6b2-0000-7000-8000-000000000071", "0190a6b2-0000-7000-8000-000000000072"
	record := func(marker byte, task *wire.Task, evs []*wire.Event) []byte {
		v := []byte{marker, 0, 0, 0, 0}
		v, err := wire.AppendTaskJSON(v, task, true)
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint32(v[1:5], uint32(len(v)-5))
		v, err = taskrec.AppendEventsJSON(v, evs)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(btx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := btx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint32(nil, 7)); err != nil {
			return err
		}
		for id, marker := range map[string]byte{open: taskrec.WithEvents, closed: taskrec.KeptClosed} {
			task, evs := mk(id)
			if err := btx.Bucket(bucketTasks).Put([]byte(id), record(marker, task, evs)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = bdb.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open of a schema 7 file: %v", err)
	}
	defer db.Close(context.Background())
	read := func(id string) (*wire.Task, []*wire.Event, []byte) {
		t.Helper()
		var task *wire.Task
		var evs []*wire.Event
		var rec []byte
		if err := db.View(func(tx *Tx) error {
			var err error
			if task, err = tx.Task(id); err != nil {
				return err
			}
			rec = bytes.Clone(tx.b(bucketTasks).Get([]byte(id)))
			evs, err = tx.Events(id, 0, 0)
			return err
		}); err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		return task, evs, rec
	}
	for _, id := range []string{open, closed} {
		want, wantEvs := mk(id)
		got, evs, _ := read(id)
		if w, g := mustJSON(t, want), mustJSON(t, got); g != w {
			t.Fatalf("task %s\n got %s\nwant %s", id, g, w)
		}
		if w, g := mustJSON(t, wantEvs), mustJSON(t, evs); g != w {
			t.Fatalf("events of %s\n got %s\nwant %s", id, g, w)
		}
	}
	// A new state with its event: the open record takes it, the closed
	// one sends it to the events bucket; both are compact now.
	for _, id := range []string{open, closed} {
		task, evs, _ := read(id)
		task.History = append(task.History, wire.Transition{From: task.Status, Status: wire.StatusExecuting, At: wire.Time{Time: at.Add(time.Second)}})
		task.Status, task.UpdatedAt, task.Seq = wire.StatusExecuting, at.Add(time.Second), 3
		ev := &wire.Event{TaskID: id, Seq: 3, Type: wire.EventStatus, At: wire.Time{Time: at.Add(time.Second)},
			Data: wire.StatusEventJSON(&wire.StatusEventData{From: wire.StatusConfirmed, Status: wire.StatusExecuting, TaskID: id})}
		if err := db.Update(context.Background(), func(tx *Tx) error {
			r, err := EncodeTask(task, []*wire.Event{ev})
			if err != nil {
				return err
			}
			return tx.PutRecord(r)
		}); err != nil {
			t.Fatal(err)
		}
		got, gotEvs, rec := read(id)
		if w, g := mustJSON(t, task), mustJSON(t, got); g != w {
			t.Fatalf("task %s after the write\n got %s\nwant %s", id, g, w)
		}
		if w, g := mustJSON(t, append(evs, ev)), mustJSON(t, gotEvs); g != w {
			t.Fatalf("events of %s after the write\n got %s\nwant %s", id, g, w)
		}
		wantMarker := byte(taskrec.Compact)
		if id == closed {
			wantMarker = taskrec.CompactClosed
		}
		if rec[0] != wantMarker {
			t.Errorf("%s: record marker %d, want %d", id, rec[0], wantMarker)
		}
	}
	rep, err := db.Check(context.Background())
	if err != nil || !rep.OK || rep.SchemaVersion != SchemaVersion || rep.Tasks != 2 {
		t.Fatalf("Check = %+v, %v; want OK, schema %d, 2 tasks", rep, err, SchemaVersion)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A task created with its events keeps them in its record: the write
// touches the tasks bucket only (and the retention index when final);
// later writes' events join them while they fit under taskrec.KeptMax, and once
// one does not, its events and all later ones go to the events bucket.
func TestCreateKeepsEvents(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	now := time.Now()
	task := &wire.Task{ID: "0190a6b2-0000-7000-8000-000000000001", Type: "echo", Status: wire.StatusExecuting,
		Payload: wire.JSONValue(`{}`), CreatedAt: now, UpdatedAt: now,
		History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusExecuting, At: wire.Time{Time: now}}}}
	evs := func(from, n int) []*wire.Event {
		var out []*wire.Event
		for i := from; i < from+n; i++ {
			out = append(out, &wire.Event{TaskID: task.ID, Seq: uint64(i), Type: wire.EventLog, At: wire.Time{Time: now}, Data: wire.JSONValue(`{}`)})
		}
		return out
	}
	write := func(create bool, e []*wire.Event) {
		t.Helper()
		if err := db.Update(context.Background(), func(tx *Tx) error {
			rec, err := EncodeTask(task, e)
			if err != nil {
				return err
			}
			if create {
				return tx.CreateRecord(rec)
			}
			return tx.PutRecord(rec)
		}); err != nil {
			t.Fatal(err)
		}
	}
	inBuckets := func() (evKeys int, kept bool) {
		t.Helper()
		db.View(func(tx *Tx) error {
			evKeys = tx.b(bucketEvents).KeyN()
			rec := tx.b(bucketTasks).Get([]byte(task.ID))
			kept = taskrec.Kept(rec)
			return nil
		})
		return evKeys, kept
	}
	write(true, evs(1, 3))
	if n, kept := inBuckets(); n != 0 || !kept {
		t.Fatalf("after create: %d event records, kept in the task %v; want 0, true", n, kept)
	}
	write(false, evs(4, 1)) // joins them
	if n, kept := inBuckets(); n != 0 || !kept {
		t.Fatalf("after a small update: %d event records, kept in the task %v; want 0, true", n, kept)
	}
	big := evs(5, 1)
	big[0].Data = wire.JSONValue(`{"pad":"` + strings.Repeat("x", taskrec.KeptMax) + `"}`)
	write(false, big) // does not fit: to the events bucket, and so are later ones
	task.Status = wire.StatusCompleted
	task.History = append(task.History, wire.Transition{From: wire.StatusExecuting, Status: wire.StatusCompleted, At: wire.Time{Time: now}})
	write(false, evs(6, 1))
	if n, kept := inBuckets(); n != 2 || !kept {
		t.Fatalf("after update: %d event records, kept in the task %v; want 2, true", n, kept)
	}
	var seqs []uint64
	db.View(func(tx *Tx) error {
		all, _ := tx.Events(task.ID, 0, 0)
		for _, e := range all {
			seqs = append(seqs, e.Seq)
		}
		return nil
	})
	if len(seqs) != 6 || seqs[5] != 6 {
		t.Fatalf("events %v, want 1..6 in order", seqs)
	}
	var got *wire.Task
	db.View(func(tx *Tx) error {
		got, err = tx.Task(task.ID)
		return nil
	})
	if err != nil || got.Status != wire.StatusCompleted {
		t.Fatalf("after update: task %+v (%v), want completed", got, err)
	}
	var pruned int
	if err := db.Update(context.Background(), func(tx *Tx) error {
		pruned, err = tx.PruneFinished(now.Add(time.Hour), 0, 10)
		return err
	}); err != nil || pruned != 1 {
		t.Fatalf("PruneFinished = %d, %v; want 1", pruned, err)
	}
	if n, _ := inBuckets(); n != 0 {
		t.Errorf("%d event records left after pruning", n)
	}
}
