package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/store"
)

// TestRawBucket: the raw door to a Records' bucket reads and writes bytes
// in a top-level bucket and in buckets nested in it, scans in key order
// deleting as it goes, lists the nested buckets, and sees what the typed
// door wrote; a bucket that does not exist reads as empty and is never
// created by a read. Before a checkpoint and after a reopen alike.
func TestRawBucket(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, store.Options{})
	top := store.RawRecords("raw_test")
	view(t, db, func(tx *store.Tx) error {
		b := top.Raw(tx)
		if b.Exists() || b.Get([]byte("a")) != nil || b.Count() != 0 || b.Bucket([]byte("x")).Exists() {
			t.Error("a missing bucket does not read as empty")
		}
		if err := b.Put([]byte("a"), nil); err == nil {
			t.Error("Put to a missing bucket: no error")
		}
		if _, err := top.CreateRaw(tx); err == nil {
			t.Error("CreateRaw in a read transaction: no error")
		}
		return b.Scan(nil, func(_, _ []byte) error { t.Error("Scan of a missing bucket called fn"); return nil })
	})
	update(t, db, func(tx *store.Tx) error {
		if top.Raw(tx).Exists() {
			t.Error("Raw in a write transaction created the bucket")
		}
		b, err := top.CreateRaw(tx)
		if err != nil {
			return err
		}
		for i := range 5 {
			if err := b.Put(fmt.Appendf(nil, "k%d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
				return err
			}
		}
		for _, name := range []string{"n2", "n1"} {
			n, err := b.CreateBucket([]byte(name))
			if err != nil {
				return err
			}
			seq, err := n.NextSequence()
			if err != nil || seq != 1 {
				t.Errorf("NextSequence of a new bucket: %d, %v", seq, err)
			}
			if err := n.Put([]byte("k"), []byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx *store.Tx) error {
		b := top.Raw(tx)
		// Delete the records before k3 as they are met.
		return b.Scan(nil, func(k, _ []byte) error {
			if string(k) >= "k3" {
				return store.ErrStop
			}
			return b.Delete(k)
		})
	})
	check := func(when string) {
		t.Helper()
		view(t, db, func(tx *store.Tx) error {
			b := top.Raw(tx)
			var got []string
			if err := b.Scan([]byte("k"), func(k, v []byte) error {
				got = append(got, string(k)+"="+string(v))
				return nil
			}); err != nil {
				return err
			}
			if want := []string{"k3=v3", "k4=v4"}; !slices.Equal(got, want) {
				t.Errorf("%s: Scan: %v, want %v (nested buckets are not records)", when, got, want)
			}
			if n := b.Count(); n != 2 {
				t.Errorf("%s: Count %d, want 2", when, n)
			}
			var v []byte
			if err := top.GetInto(tx, []byte("k4"), &v); err != nil || string(v) != "v4" {
				t.Errorf("%s: the typed door reads %q, %v", when, v, err)
			}
			got = got[:0]
			if err := b.Buckets(func(name []byte) error {
				got = append(got, string(name)+"="+string(b.Bucket(name).Get([]byte("k"))))
				return nil
			}); err != nil {
				return err
			}
			if want := []string{"n1=n1", "n2=n2"}; !slices.Equal(got, want) {
				t.Errorf("%s: Buckets: %v, want %v", when, got, want)
			}
			stop := errors.New("stop")
			if err := b.Buckets(func([]byte) error { return stop }); !errors.Is(err, stop) {
				t.Errorf("%s: Buckets returns %v, want fn's error", when, err)
			}
			return nil
		})
	}
	check("before a checkpoint")
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, store.Options{})
	check("after a reopen")
}
