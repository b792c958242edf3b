package outbox_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
)

func newItem(tb testing.TB, peer, url string) *outbox.Item {
	tb.Helper()
	now := time.Now().UTC()
	return &outbox.Item{ID: uuid.NewString(), Peer: peer, URL: url, Type: "p2p:task_request",
		Payload: []byte(`{"task":{"id":"t"}}`), CreatedAt: now, NextAttempt: now}
}

func ids(items []*outbox.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}

// enqueueAll queues items in one transaction each, in order.
func enqueueAll(tb testing.TB, db *store.DB, items ...*outbox.Item) {
	tb.Helper()
	for _, it := range items {
		update(tb, db, func(tx *store.Tx) error { return outbox.Put(tx, it) })
	}
}

func TestQueues(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	// Interleaved destinations: each keeps its own order.
	var a, b []*outbox.Item
	for range 5 {
		a = append(a, newItem(t, "agent-a", ""))
		b = append(b, newItem(t, "", "http://127.0.0.1:9/hook"))
		enqueueAll(t, db, a[len(a)-1], b[len(b)-1])
	}
	var gotA, gotB []*outbox.Item
	var dests []string
	view(t, db, func(tx *store.Tx) error {
		var err error
		if gotA, err = outbox.Batch(tx, outbox.PeerDest("agent-a"), 3, nil); err != nil {
			return err
		}
		if gotB, err = outbox.Batch(tx, outbox.URLDest("http://127.0.0.1:9/hook"), 100, nil); err != nil {
			return err
		}
		dests, err = outbox.Dests(tx)
		return err
	})
	if !slices.Equal(ids(gotA), ids(a[:3])) {
		t.Errorf("first 3 of agent-a = %v, want %v", ids(gotA), ids(a[:3]))
	}
	if !slices.Equal(ids(gotB), ids(b)) {
		t.Errorf("hook queue = %v, want %v", ids(gotB), ids(b))
	}
	if want := []string{"peer:agent-a", "url:http://127.0.0.1:9/hook"}; !slices.Equal(dests, want) {
		t.Errorf("destinations = %v, want %v", dests, want)
	}

	t.Run("skip", func(t *testing.T) {
		// Passed over without counting: a[0] and a[2] skipped, the next
		// three of the queue returned.
		skip := map[uint64]bool{a[0].Seq: true, a[2].Seq: true}
		var got []*outbox.Item
		view(t, db, func(tx *store.Tx) error {
			var err error
			got, err = outbox.Batch(tx, outbox.PeerDest("agent-a"), 3, func(seq uint64) bool { return skip[seq] })
			return err
		})
		if want := []*outbox.Item{a[1], a[3], a[4]}; !slices.Equal(ids(got), ids(want)) {
			t.Errorf("skipping 0 and 2 = %v, want %v", ids(got), ids(want))
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for name, it := range map[string]*outbox.Item{
			"no destination": newItem(t, "", ""),
			"both":           newItem(t, "p", "http://x"),
			"NUL":            newItem(t, "p\x00q", ""),
		} {
			err := db.Update(t.Context(), func(tx *store.Tx) error { return outbox.Put(tx, it) })
			if !errors.Is(err, outbox.ErrBadDestination) {
				t.Errorf("%s: %v, want ErrBadDestination", name, err)
			}
		}
		dup := *a[0]
		err := db.Update(t.Context(), func(tx *store.Tx) error { return outbox.Put(tx, &dup) })
		if !errors.Is(err, store.ErrExists) {
			t.Errorf("same id twice: %v, want ErrExists", err)
		}
	})

	t.Run("dead letters keep their place", func(t *testing.T) {
		now := time.Now().UTC()
		update(t, db, func(tx *store.Tx) error {
			if err := outbox.Delivered(tx, a[0].ID); err != nil {
				return err
			}
			for i, it := range a[1:3] {
				it.Attempts, it.LastError, it.DeadAt, it.Unreachable = 6, "refused", now, i == 0
				if err := outbox.Kill(tx, it); err != nil {
					return err
				}
			}
			return nil
		})
		view(t, db, func(tx *store.Tx) error {
			if got := outbox.Count(tx, outbox.Dead); got != 2 {
				t.Errorf("dead = %d, want 2", got)
			}
			if !outbox.HasDead(tx, outbox.PeerDest("agent-a"), true) || outbox.HasDead(tx, outbox.URLDest("http://127.0.0.1:9/hook"), false) {
				t.Error("OutboxHasDead disagrees")
			}
			it, state, err := outbox.Get(tx, a[2].ID)
			if err != nil || state != outbox.Dead || it.LastError != "refused" || it.Unreachable {
				t.Errorf("OutboxGet = %+v %s %v", it, state, err)
			}
			head, err := outbox.Batch(tx, outbox.PeerDest("agent-a"), 1, nil)
			if err != nil || len(head) != 1 || head[0].ID != a[3].ID {
				t.Errorf("head after two deaths = %v, want %s", ids(head), a[3].ID)
			}
			return nil
		})
		var n int
		update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = outbox.ReviveDest(tx, outbox.PeerDest("agent-a"), true, now, 100)
			return err
		})
		if n != 1 {
			t.Errorf("revived %d unreachable, want 1", n)
		}
		update(t, db, func(tx *store.Tx) error {
			it, err := outbox.Revive(tx, a[2].ID, now)
			if err == nil && (it.Attempts != 0 || it.LastError != "refused") {
				t.Errorf("revived = %+v, want attempts reset and the last error kept", it)
			}
			return err
		})
		view(t, db, func(tx *store.Tx) error {
			all, err := outbox.Batch(tx, outbox.PeerDest("agent-a"), 100, nil)
			if want := ids(a[1:]); !slices.Equal(ids(all), want) {
				t.Errorf("queue after revival = %v, want %v (original order)", ids(all), want)
			}
			return err
		})
	})

	t.Run("list pages and drop", func(t *testing.T) {
		var page1, page2 []*outbox.Item
		var next string
		view(t, db, func(tx *store.Tx) error {
			var err error
			if page1, next, err = outbox.List(tx, outbox.Filter{State: outbox.Pending, Limit: 5}); err != nil {
				return err
			}
			page2, _, err = outbox.List(tx, outbox.Filter{State: outbox.Pending, After: next, Limit: 100})
			return err
		})
		all := append(ids(page1), ids(page2)...)
		want := append(ids(a[1:]), ids(b)...)
		if !slices.Equal(all, want) || next != page1[4].ID {
			t.Errorf("pages = %v / next %s, want %v", all, next, want)
		}
		update(t, db, func(tx *store.Tx) error { return outbox.Drop(tx, b[0].ID) })
		err := db.Update(t.Context(), func(tx *store.Tx) error { return outbox.Drop(tx, b[0].ID) })
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second drop: %v, want ErrNotFound", err)
		}
	})
}
