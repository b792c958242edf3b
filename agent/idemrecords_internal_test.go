package agent

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func openIdemDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// TestIdempotencyRecords: the records' round trip, an overwrite that
// keeps the expiry of its first creation, and pruning in batches (moved
// here with the records from package store).
func TestIdempotencyRecords(t *testing.T) {
	db := openIdemDB(t)
	ctx := context.Background()
	update := func(fn func(*store.Tx) error) {
		t.Helper()
		if err := db.Update(ctx, fn); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(i int, at time.Time) *idemRecord {
		return &idemRecord{RequestHash: "h" + string(rune('0'+i)), Status: 201, ContentType: "application/json",
			Body: []byte(`{"task_id":"t"}` + "\x00\xff"), TaskID: "t", CreatedAt: at}
	}
	put := func(tx *store.Tx, scope, key string, r *idemRecord) error {
		raw, err := encodeIdem(r)
		if err != nil {
			return err
		}
		return putIdem(tx, scope, key, r.CreatedAt, raw)
	}
	update(func(tx *store.Tx) error {
		for i, s := range []string{"alice", "bob"} {
			for j := range 3 {
				if err := put(tx, s, "key"+string(rune('0'+j)), rec(i, base.Add(time.Duration(j)*time.Hour))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	get := func(scope, key string) (*idemRecord, error) {
		var r *idemRecord
		err := db.View(func(tx *store.Tx) error {
			var err error
			r, err = getIdem(tx, scope, key)
			return err
		})
		return r, err
	}
	prune := func(cutoff time.Time, max int) int {
		t.Helper()
		var n int
		update(func(tx *store.Tx) (err error) {
			n, err = pruneIdem(tx, cutoff, max)
			return err
		})
		return n
	}

	t.Run("round trip", func(t *testing.T) {
		got, err := get("bob", "key1")
		if err != nil {
			t.Fatalf("getIdem: %v", err)
		}
		want := rec(1, base.Add(time.Hour))
		if got.RequestHash != want.RequestHash || got.Status != want.Status || got.ContentType != want.ContentType ||
			string(got.Body) != string(want.Body) || got.TaskID != want.TaskID || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("getIdem = %+v, want %+v", got, want)
		}
		if _, err := get("carol", "key1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("getIdem of another scope = %v, want ErrNotFound", err)
		}
	})
	t.Run("overwrite keeps creation time for expiry", func(t *testing.T) {
		update(func(tx *store.Tx) error {
			r := rec(0, base.Add(100*time.Hour))
			r.Status = 200
			return put(tx, "alice", "key2", r)
		})
		got, err := get("alice", "key2")
		if err != nil || got.Status != 200 {
			t.Fatalf("getIdem after overwrite = %+v, %v; want status 200", got, err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		if n := prune(base.Add(90*time.Minute), 3); n != 3 {
			t.Errorf("pruneIdem(max 3) = %d, want 3", n)
		}
		if n := prune(base.Add(90*time.Minute), 1000); n != 1 {
			t.Errorf("second pruneIdem = %d, want 1", n)
		}
		for _, s := range []string{"alice", "bob"} {
			for j, want := range []bool{false, false, true} {
				key := "key" + string(rune('0'+j))
				_, err := get(s, key)
				if got := err == nil; got != want {
					t.Errorf("%s/%s present = %v (err %v), want %v", s, key, got, err, want)
				}
			}
		}
		// alice/key2 was overwritten with a later CreatedAt but expires by
		// its first one.
		if n := prune(base.Add(3*time.Hour), 1000); n != 2 {
			t.Errorf("pruneIdem(base+3h) = %d, want 2", n)
		}
		if _, err := get("alice", "key2"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("overwritten record after its first creation time expired: %v, want ErrNotFound", err)
		}
	})
	t.Run("prune many", func(t *testing.T) {
		update(func(tx *store.Tx) error {
			for i := range 250 {
				if err := put(tx, "many", "k"+time.Duration(i).String(), rec(0, base.Add(time.Duration(i)*time.Second))); err != nil {
					return err
				}
			}
			return nil
		})
		total := 0
		for n := prune(base.Add(time.Hour), 100); n > 0; n = prune(base.Add(time.Hour), 100) {
			total += n
		}
		if total != 250 {
			t.Errorf("pruned %d records in batches of 100, want 250", total)
		}
	})
}

// TestIdempotencyRecordOfToday: a record in the form the store wrote
// before submits kept their task (status, content type and body as
// sent) still replays, as it was sent, until it expires.
func TestIdempotencyRecordOfToday(t *testing.T) {
	a := openParked(t, parkedConfig(t))
	defer closeParked(t, a)
	ctx := context.Background()
	created := a.clock.Now()
	// The JSON of the former store.IdemRecord, field for field.
	old := []byte(`{"request_hash":"h1","status":201,"content_type":"application/json","body":"eyJ0YXNrX2lkIjoidDEiLCJzdGF0dXMiOiJwZW5kaW5nIiwibWVzc2FnZSI6InRhc2sgYWNjZXB0ZWQifQ==","task_id":"t1","created_at":"` +
		created.UTC().Format(time.RFC3339Nano) + `"}`)
	if err := a.db.Update(ctx, func(tx *store.Tx) error { return putIdem(tx, "admin", "old", created, old) }); err != nil {
		t.Fatal(err)
	}
	r := IdemRequest{Scope: "admin", Key: "old", Hash: "h1"}
	sub, err := a.Submit(ctx, parkedAdmin, &wire.SubmitRequest{TaskType: "keep", Payload: wire.JSONValue(`{}`)}, SubmitOptions{Idempotency: &r})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"task_id":"t1","status":"pending","message":"task accepted"}`
	if !sub.Replayed || sub.Task != nil || sub.Sent == nil || string(sub.Sent.Body) != want || sub.Sent.Status != 201 ||
		sub.Sent.ContentType != "application/json" || sub.Sent.TaskID != "t1" {
		t.Fatalf("replay of an old record = %+v (sent %+v), want %s as sent", sub, sub.Sent, want)
	}
	if got := a.IdempotentTask("admin", "old"); got != "t1" {
		t.Errorf("task of the old record = %q, want t1", got)
	}
}
