package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// The events of one write are one record; Events reads any mix of such
// groups and single events (the layout of schema 1) in order, from any
// point and with any limit.
func TestEventGroups(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	now := time.Now()
	task := newTask(t, "echo", wire.StatusPending, now)
	other := newTask(t, "echo", wire.StatusPending, now)
	var seq uint64
	events := func(id string, n int) []*wire.Event {
		var evs []*wire.Event
		for range n {
			seq++
			evs = append(evs, &wire.Event{TaskID: id, Seq: seq, Type: wire.EventLog, At: wire.Time{Time: now},
				Data: wire.JSONValue(fmt.Sprintf(`{"n":%d}`, seq))})
		}
		return evs
	}
	// writes of 3 events (a group), 1, 2 (a group), 1 through AppendEvent,
	// 4 (a group)
	for i, n := range []int{3, 1, 2, -1, 4} {
		update(t, db, func(tx *store.Tx) error {
			if n < 0 {
				return tx.AppendEvent(events(task.ID, 1)[0])
			}
			rec, err := store.EncodeTask(task, events(task.ID, n))
			if err != nil {
				return err
			}
			if i == 0 {
				return tx.CreateRecord(rec)
			}
			return tx.PutRecord(rec)
		})
	}
	total := seq
	// Another task's events right after, grouped: not read as the first's.
	update(t, db, func(tx *store.Tx) error {
		seq = 0
		rec, err := store.EncodeTask(other, events(other.ID, 3))
		if err != nil {
			return err
		}
		return tx.CreateRecord(rec)
	})
	for after := uint64(0); after <= total+1; after++ {
		for _, limit := range []int{0, 1, 2, 3, 5, 20} {
			var got []*wire.Event
			view(t, db, func(tx *store.Tx) error {
				var err error
				got, err = tx.Events(task.ID, after, limit)
				return err
			})
			want := int(total) - int(after)
			if want < 0 {
				want = 0
			}
			if limit > 0 && want > limit {
				want = limit
			}
			if len(got) != want {
				t.Fatalf("Events(after %d, limit %d): %d events, want %d", after, limit, len(got), want)
			}
			for i, e := range got {
				if e.TaskID != task.ID || e.Seq != after+uint64(i)+1 || string(e.Data) != fmt.Sprintf(`{"n":%d}`, e.Seq) {
					t.Fatalf("Events(after %d, limit %d)[%d] = %+v", after, limit, i, e)
				}
			}
		}
	}
	var others []*wire.Event
	view(t, db, func(tx *store.Tx) error {
		var err error
		others, err = tx.Events(other.ID, 1, 0)
		return err
	})
	if len(others) != 2 || others[0].Seq != 2 || others[0].TaskID != other.ID {
		t.Errorf("the other task's events after 1: %+v", others)
	}
}
