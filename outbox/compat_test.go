package outbox_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
)

// testdata/written-before-the-move.db was written by store.Tx's outbox
// methods, before the records moved to this package: five items queued
// (two webhook URLs, one peer), then one peer message killed as
// unreachable and one webhook item rewritten after a failed attempt. The
// same steps through this package must leave the same bytes, and the file
// must read and drain as it is.

var fixtureAt = time.Date(2026, 12, 1, 10, 0, 0, 123000000, time.UTC)

func fixtureItems() []*outbox.Item {
	at := fixtureAt
	return []*outbox.Item{
		{ID: "0193a000-0000-7000-8000-000000000001", URL: "http://127.0.0.1:1/hook", Type: "callback", Payload: json.RawMessage(`{"task_id":"t1","status":"completed"}`), CreatedAt: at, NextAttempt: at},
		{ID: "0193a000-0000-7000-8000-000000000002", Peer: "sys_b_000001", Type: "p2p:task_request", CorrelationID: "c1", Payload: json.RawMessage(`{"task_type":"echo"}`), CreatedAt: at, NextAttempt: at},
		{ID: "0193a000-0000-7000-8000-000000000003", URL: "http://127.0.0.1:1/hook", Type: "callback", Payload: json.RawMessage(`{"task_id":"t2","status":"failed"}`), CreatedAt: at, NextAttempt: at},
		{ID: "0193a000-0000-7000-8000-000000000004", URL: "http://127.0.0.1:1/other", Type: "a2a_push", Payload: json.RawMessage(`{"content_type":"application/json","body":{"kind":"task"}}`), CreatedAt: at, NextAttempt: at},
		{ID: "0193a000-0000-7000-8000-000000000005", Peer: "sys_b_000001", Type: "p2p:task_cancel", Payload: json.RawMessage(`{}`), CreatedAt: at, NextAttempt: at},
	}
}

// dump is every record of the three buckets, key → value.
func dump(tb testing.TB, db *store.DB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	view(tb, db, func(tx *store.Tx) error {
		for _, name := range []string{"outbox", "outbox_dead", "outbox_id"} {
			err := store.RawRecords(name).Scan(tx, nil, func(k []byte, v *[]byte) error {
				out[name+"/"+string(k)] = string(*v)
				return nil
			})
			if err != nil {
				return err
			}
			out[name+"/sequence"] = string(rune(store.RawRecords(name).Sequence(tx)))
		}
		return nil
	})
	return out
}

func TestSameBytesAsBeforeTheMove(t *testing.T) {
	before := dump(t, openDB(t, copyFixture(t, "written-before-the-move.db"), store.Options{}))
	if len(before) != 3+4+1+5 {
		t.Fatalf("the fixture holds %d records, want 13: %v", len(before), before)
	}
	db := openDB(t, tempPath(t), store.Options{})
	items := fixtureItems()
	update(t, db, func(tx *store.Tx) error {
		for _, it := range items {
			if err := outbox.Put(tx, it); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx *store.Tx) error {
		it := *items[4]
		it.Attempts, it.LastError, it.DeadAt, it.Unreachable = 3, "connection refused", fixtureAt.Add(time.Minute), true
		if err := outbox.Kill(tx, &it); err != nil {
			return err
		}
		it2 := *items[2]
		it2.Attempts, it2.LastError, it2.NextAttempt = 1, "503 Service Unavailable", fixtureAt.Add(time.Second)
		return outbox.RetryLater(tx, &it2)
	})
	after := dump(t, db)
	for k, want := range before {
		if got, ok := after[k]; !ok || got != want {
			t.Errorf("%q: got %q (present %v), want %q", k, got, ok, want)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%q: written now, not before", k)
		}
	}
}

func TestReadsAFileWrittenBeforeTheMove(t *testing.T) {
	db := openDB(t, copyFixture(t, "written-before-the-move.db"), store.Options{})
	var dests []string
	var hook, peer []*outbox.Item
	var dead *outbox.Item
	var state outbox.State
	view(t, db, func(tx *store.Tx) error {
		var err error
		if dests, err = outbox.Dests(tx); err != nil {
			return err
		}
		if hook, err = outbox.Batch(tx, outbox.URLDest("http://127.0.0.1:1/hook"), 10, nil); err != nil {
			return err
		}
		if peer, err = outbox.Batch(tx, outbox.PeerDest("sys_b_000001"), 10, nil); err != nil {
			return err
		}
		dead, state, err = outbox.Get(tx, "0193a000-0000-7000-8000-000000000005")
		return err
	})
	if want := []string{"peer:sys_b_000001", "url:http://127.0.0.1:1/hook", "url:http://127.0.0.1:1/other"}; !slices.Equal(dests, want) {
		t.Errorf("Dests = %q, want %q", dests, want)
	}
	if len(hook) != 2 || hook[0].Seq != 1 || hook[1].Seq != 3 || hook[1].Attempts != 1 || hook[1].LastError != "503 Service Unavailable" {
		t.Errorf("webhook queue = %+v", hook)
	}
	if len(peer) != 1 || peer[0].CorrelationID != "c1" || string(peer[0].Payload) != `{"task_type":"echo"}` {
		t.Errorf("peer queue = %+v", peer)
	}
	if state != outbox.Dead || !dead.Unreachable || dead.Attempts != 3 {
		t.Errorf("dead letter = %+v (%s)", dead, state)
	}
	// It drains: the peer's unreachable dead letter is requeued at its
	// place, and every item is delivered and removed.
	update(t, db, func(tx *store.Tx) error {
		n, err := outbox.ReviveDest(tx, outbox.PeerDest("sys_b_000001"), true, fixtureAt, 10)
		if n != 1 {
			t.Errorf("ReviveDest = %d, want 1", n)
		}
		return err
	})
	for round := 0; round < 10; round++ {
		var left []string
		view(t, db, func(tx *store.Tx) error {
			var err error
			left, err = outbox.Dests(tx)
			return err
		})
		if len(left) == 0 {
			break
		}
		update(t, db, func(tx *store.Tx) error {
			for _, d := range left {
				b, err := outbox.Batch(tx, d, 1, nil)
				if err != nil {
					return err
				}
				if err := outbox.Delivered(tx, b[0].ID); err != nil {
					return err
				}
			}
			return nil
		})
	}
	view(t, db, func(tx *store.Tx) error {
		if p, d := outbox.Count(tx, outbox.Pending), outbox.Count(tx, outbox.Dead); p != 0 || d != 0 {
			t.Errorf("after draining: %d pending, %d dead", p, d)
		}
		return nil
	})
}
