package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func TestTaskRoundTrip(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	at := time.Date(2025, 3, 4, 5, 6, 7, 8000000, time.UTC)
	want := newTask(t, "resize", wire.StatusFailed, at)
	want.Payload = wire.JSONValue(`{"w":640}`)
	want.ErrorCode, want.ErrorMessage, want.Recoverable = "agent_restarted", "restarted", true
	want.Seq = 7
	update(t, db, func(tx *store.Tx) error { return tx.CreateTask(want) })

	var got *wire.Task
	view(t, db, func(tx *store.Tx) error {
		var err error
		got, err = tx.Task(want.ID)
		return err
	})
	if got.ID != want.ID || got.Type != want.Type || got.Status != want.Status || got.Seq != want.Seq ||
		got.ErrorCode != want.ErrorCode || !got.Recoverable || string(got.Payload) != string(want.Payload) ||
		!got.UpdatedAt.Equal(want.UpdatedAt) || len(got.History) != 1 {
		t.Errorf("Task() = %+v, want %+v", got, want)
	}

	t.Run("duplicate", func(t *testing.T) {
		err := db.Update(t.Context(), func(tx *store.Tx) error { return tx.CreateTask(want) })
		if !errors.Is(err, store.ErrExists) {
			t.Errorf("CreateTask of an existing id = %v, want ErrExists", err)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		err := db.View(func(tx *store.Tx) error {
			_, err := tx.Task("no-such-task")
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Task(unknown) = %v, want ErrNotFound", err)
		}
	})
}

// listAll pages through ListTasks and returns the ids in order and the
// number of pages.
func listAll(t *testing.T, db *store.DB, f store.TaskFilter) ([]string, int) {
	t.Helper()
	var ids []string
	pages := 0
	for range 1000 {
		var page []*wire.Task
		var next string
		view(t, db, func(tx *store.Tx) error {
			var err error
			page, next, err = tx.ListTasks(f)
			return err
		})
		pages++
		if f.Limit > 0 && len(page) > f.Limit {
			t.Fatalf("page of %d tasks, limit %d", len(page), f.Limit)
		}
		for _, task := range page {
			ids = append(ids, task.ID)
		}
		if next == "" {
			return ids, pages
		}
		if len(page) == 0 || next != page[len(page)-1].ID {
			t.Fatalf("next page token %q is not the last id of a non-empty page", next)
		}
		f.After = next
	}
	t.Fatal("ListTasks did not stop paging")
	return nil, 0
}

func reversedIDs(ts []*wire.Task, keep func(*wire.Task) bool) []string {
	var out []string
	for i := len(ts) - 1; i >= 0; i-- {
		if keep == nil || keep(ts[i]) {
			out = append(out, ts[i].ID)
		}
	}
	return out
}

func TestListTasks(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	statuses := []wire.Status{wire.StatusConfirmed, wire.StatusCompleted, wire.StatusExecuting, wire.StatusFailed, wire.StatusInfoNeeded}
	var all []*wire.Task
	now := time.Now()
	for i := range 25 {
		typ := "a"
		if i%2 == 1 {
			typ = "b"
		}
		all = append(all, newTask(t, typ, statuses[i%len(statuses)], now.Add(time.Duration(i)*time.Millisecond)))
	}
	update(t, db, func(tx *store.Tx) error {
		// Insert out of order: the listing must not depend on it.
		for _, i := range []int{3, 0, 24, 7} {
			if err := tx.CreateTask(all[i]); err != nil {
				return err
			}
		}
		for i, task := range all {
			if slices.Contains([]int{3, 0, 24, 7}, i) {
				continue
			}
			if err := tx.CreateTask(task); err != nil {
				return err
			}
		}
		return nil
	})

	tests := []struct {
		name   string
		filter store.TaskFilter
		keep   func(*wire.Task) bool
		pages  int
	}{
		{"all in pages of 10", store.TaskFilter{Limit: 10}, nil, 3},
		{"all in pages of 25", store.TaskFilter{Limit: 25}, nil, 1},
		{"all in pages of 5", store.TaskFilter{Limit: 5}, nil, 5},
		{"default limit", store.TaskFilter{}, nil, 1},
		{"status", store.TaskFilter{Status: wire.StatusCompleted, Limit: 2},
			func(t *wire.Task) bool { return t.Status == wire.StatusCompleted }, 3},
		{"type", store.TaskFilter{TaskType: "b", Limit: 4},
			func(t *wire.Task) bool { return t.Type == "b" }, 3},
		{"non-terminal", store.TaskFilter{NonTerminal: true, Limit: 4},
			func(t *wire.Task) bool { return !t.Status.Terminal() }, 4},
		{"type and non-terminal", store.TaskFilter{TaskType: "a", NonTerminal: true, Limit: 3},
			func(t *wire.Task) bool { return t.Type == "a" && !t.Status.Terminal() }, 3},
		{"no match", store.TaskFilter{TaskType: "zzz", Limit: 3}, func(*wire.Task) bool { return false }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pages := listAll(t, db, tt.filter)
			want := reversedIDs(all, tt.keep)
			if !slices.Equal(got, want) {
				t.Errorf("ids =\n%v\nwant (newest first, no gaps or duplicates)\n%v", got, want)
			}
			if pages != tt.pages {
				t.Errorf("%d pages, want %d", pages, tt.pages)
			}
		})
	}

	t.Run("token between ids", func(t *testing.T) {
		// A token that is not a stored id (the task was pruned) still
		// continues with the next older task.
		var page []*wire.Task
		view(t, db, func(tx *store.Tx) error {
			var err error
			page, _, err = tx.ListTasks(store.TaskFilter{After: all[10].ID + "x", Limit: 3})
			return err
		})
		var got []string
		for _, task := range page {
			got = append(got, task.ID)
		}
		if want := []string{all[10].ID, all[9].ID, all[8].ID}; !slices.Equal(got, want) {
			t.Errorf("ids after %s+x = %v, want %v", all[10].ID, got, want)
		}
	})
	t.Run("token after the oldest", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			page, next, err := tx.ListTasks(store.TaskFilter{After: all[0].ID, Limit: 3})
			if len(page) != 0 || next != "" {
				t.Errorf("ListTasks after the oldest id = %d tasks, next %q; want none", len(page), next)
			}
			return err
		})
	})
}

func event(taskID string, seq uint64) *wire.Event {
	return &wire.Event{TaskID: taskID, Seq: seq, Type: wire.EventLog, At: wire.Time{Time: time.Now()},
		Data: wire.JSONValue(`{"line":"x"}`)}
}

func TestEvents(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	aSeqs := []uint64{1, 2, 3, 255, 256, 257, 70000}
	update(t, db, func(tx *store.Tx) error {
		// Interleave two tasks whose ids share a prefix.
		for i, s := range aSeqs {
			if err := tx.AppendEvent(event("a", s)); err != nil {
				return err
			}
			if i < 3 {
				if err := tx.AppendEvent(event("ab", s)); err != nil {
					return err
				}
			}
		}
		return tx.AppendEvent(event("", 1))
	})
	tests := []struct {
		id          string
		after       uint64
		limit       int
		wantSeqs    []uint64
		description string
	}{
		{"a", 0, 0, aSeqs, "all"},
		{"a", 2, 0, []uint64{3, 255, 256, 257, 70000}, "after 2"},
		{"a", 255, 0, []uint64{256, 257, 70000}, "after 255 (byte order is numeric order)"},
		{"a", 3, 2, []uint64{255, 256}, "limit"},
		{"a", 70000, 0, nil, "after the last"},
		{"ab", 0, 0, []uint64{1, 2, 3}, "other task with a longer id"},
		{"ab", 1, 0, []uint64{2, 3}, "other task after 1"},
		{"abc", 0, 0, nil, "unknown task"},
	}
	for _, tt := range tests {
		t.Run(tt.id+" "+tt.description, func(t *testing.T) {
			var evs []*wire.Event
			view(t, db, func(tx *store.Tx) error {
				var err error
				evs, err = tx.Events(tt.id, tt.after, tt.limit)
				return err
			})
			var got []uint64
			for _, e := range evs {
				if e.TaskID != tt.id {
					t.Errorf("event of task %q in the events of %q", e.TaskID, tt.id)
				}
				got = append(got, e.Seq)
			}
			if !slices.Equal(got, tt.wantSeqs) {
				t.Errorf("Events(%q, %d, %d) seqs = %v, want %v", tt.id, tt.after, tt.limit, got, tt.wantSeqs)
			}
		})
	}
}

func eventCount(t *testing.T, db *store.DB, id string) int {
	t.Helper()
	n := 0
	view(t, db, func(tx *store.Tx) error {
		evs, err := tx.Events(id, 0, 0)
		n = len(evs)
		return err
	})
	return n
}

func TestPruneFinished(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var finished []*wire.Task
	for i := range 5 {
		finished = append(finished, newTask(t, "echo", wire.StatusCompleted, base.Add(time.Duration(i)*time.Hour)))
	}
	// A live task, older than all of them, is never pruned.
	live := newTask(t, "sleep", wire.StatusExecuting, base.Add(-10*time.Hour))
	// A task that finished and was then put back in a live state.
	reopened := newTask(t, "sleep", wire.StatusFailed, base.Add(-5*time.Hour))
	update(t, db, func(tx *store.Tx) error {
		for _, task := range append(slices.Clone(finished), live, reopened) {
			if err := tx.CreateTask(task); err != nil {
				return err
			}
			for s := range uint64(3) {
				if err := tx.AppendEvent(event(task.ID, s+1)); err != nil {
					return err
				}
			}
		}
		back := *reopened
		back.Status = wire.StatusExecuting
		return tx.PutTask(&back)
	})
	prune := func(olderThan time.Time, keep, max int) int {
		t.Helper()
		var n int
		update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = tx.PruneFinished(olderThan, keep, max)
			return err
		})
		return n
	}
	exists := func(tasks ...*wire.Task) []bool {
		var out []bool
		for _, task := range tasks {
			out = append(out, taskExists(t, db, task.ID))
		}
		return out
	}

	t.Run("by age", func(t *testing.T) {
		prune(base.Add(2*time.Hour), 100, 1000)
		if got, want := exists(finished...), []bool{false, false, true, true, true}; !slices.Equal(got, want) {
			t.Errorf("after pruning older than base+2h: exists = %v, want %v", got, want)
		}
		for _, task := range finished[:2] {
			if n := eventCount(t, db, task.ID); n != 0 {
				t.Errorf("pruned task %s still has %d events", task.ID, n)
			}
		}
		if n := eventCount(t, db, finished[2].ID); n != 3 {
			t.Errorf("kept task has %d events, want 3", n)
		}
	})
	t.Run("by count", func(t *testing.T) {
		n := prune(base.Add(-100*time.Hour), 1, 1000)
		if n != 2 {
			t.Errorf("PruneFinished(keep 1) deleted %d, want 2", n)
		}
		if got, want := exists(finished...), []bool{false, false, false, false, true}; !slices.Equal(got, want) {
			t.Errorf("after keeping 1: exists = %v, want %v", got, want)
		}
	})
	t.Run("max per call", func(t *testing.T) {
		extra := putTasks(t, db, 4, "echo", wire.StatusCancelled)
		if n := prune(base.Add(1000*time.Hour), 0, 2); n != 2 {
			t.Errorf("PruneFinished(max 2) deleted %d, want 2", n)
		}
		prune(base.Add(1000*time.Hour), 0, 1000)
		if got := exists(append(slices.Clone(extra), finished[4])...); slices.Contains(got, true) {
			t.Errorf("after pruning everything finished: exists = %v, want all false", got)
		}
	})
	t.Run("never a live task", func(t *testing.T) {
		if got := exists(live, reopened); !slices.Equal(got, []bool{true, true}) {
			t.Errorf("live tasks exist = %v, want both kept", got)
		}
		if n := eventCount(t, db, live.ID) + eventCount(t, db, reopened.ID); n != 6 {
			t.Errorf("live tasks have %d events, want 6", n)
		}
	})
}
