package idemdb

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
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
	rec := func(i int, at time.Time) *Record {
		return &Record{RequestHash: "h" + string(rune('0'+i)), Status: 201, ContentType: "application/json",
			Body: []byte(`{"task_id":"t"}` + "\x00\xff"), TaskID: "t", CreatedAt: at}
	}
	put := func(tx *store.Tx, scope, key string, r *Record) error {
		raw, err := Encode(r)
		if err != nil {
			return err
		}
		return Put(tx, scope, key, r.CreatedAt, raw)
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
	get := func(scope, key string) (*Record, error) {
		var r *Record
		err := db.View(func(tx *store.Tx) error {
			var err error
			r, err = Get(tx, scope, key)
			return err
		})
		return r, err
	}
	prune := func(cutoff time.Time, max int) int {
		t.Helper()
		var n int
		update(func(tx *store.Tx) (err error) {
			n, err = Prune(tx, cutoff, max)
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
			t.Errorf("Prune(max 3) = %d, want 3", n)
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
			t.Errorf("Prune(base+3h) = %d, want 2", n)
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
