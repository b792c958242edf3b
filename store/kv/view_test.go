package kv_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/store/kv"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// writeView is a write view over an empty bbolt file's read transaction.
func writeView(t *testing.T) *kv.View {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "v.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	btx, err := db.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { btx.Rollback() })
	return kv.NewView(kv.NewLayer(), btx, true)
}

// A view opens each bucket once, however many it opens; a bucket deleted
// and made again is the one the view had.
func TestViewOpensBuckets(t *testing.T) {
	v := writeView(t)
	const n = 12 // past the ones a view keeps without a map
	for i := range n {
		b, err := v.CreateRoot(fmt.Appendf(nil, "r%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put([]byte("k"), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		name := fmt.Appendf(nil, "r%d", i)
		b := v.Root(name)
		if b == nil {
			t.Fatalf("bucket r%d not found", i)
		}
		if again := v.Root(name); again != b {
			t.Errorf("bucket r%d opened twice", i)
		}
		if got, want := string(b.Get([]byte("k"))), fmt.Sprintf("v%d", i); got != want {
			t.Errorf("r%d: k = %q, want %q", i, got, want)
		}
	}

	for _, name := range []string{"r1", "r9"} { // one of the first, one past them
		t.Run(name, func(t *testing.T) {
			b := v.Root([]byte(name))
			if err := v.DeleteRoot([]byte(name)); err != nil {
				t.Fatal(err)
			}
			if got := v.Root([]byte(name)); got != nil {
				t.Fatal("deleted bucket opens")
			}
			if got := b.Get([]byte("k")); got != nil {
				t.Errorf("deleted bucket's k = %q", got)
			}
			if err := b.Put([]byte("k"), []byte("x")); err == nil {
				t.Error("put into a deleted bucket")
			}
			nb, err := v.CreateRoot([]byte(name))
			if err != nil {
				t.Fatal(err)
			}
			if nb != b {
				t.Error("bucket made again is a new one")
			}
			if got := b.Get([]byte("k")); got != nil {
				t.Errorf("bucket made again holds k = %q", got)
			}
			if err := b.Put([]byte("k"), []byte("new")); err != nil {
				t.Fatal(err)
			}
			if got := string(v.Root([]byte(name)).Get([]byte("k"))); got != "new" {
				t.Errorf("k = %q, want new", got)
			}
		})
	}
	if got := v.Root([]byte("r0")).Get([]byte("k")); string(got) != "v0" {
		t.Errorf("r0 after the others changed: k = %q", got)
	}
}

func BenchmarkViewOpen(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "v.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket([]byte("outbox"))
		if err != nil {
			return err
		}
		return bk.Put([]byte("k"), []byte("v"))
	}); err != nil {
		b.Fatal(err)
	}
	btx, err := db.Begin(false)
	if err != nil {
		b.Fatal(err)
	}
	defer btx.Rollback()
	l := kv.NewLayer()
	b.ReportAllocs()
	for b.Loop() {
		v := kv.NewView(l, btx, false)
		if v.Root([]byte("outbox")).Get([]byte("k")) == nil {
			b.Fatal("no k")
		}
	}
}

// checkpointTx is a read transaction of a checkpoint whose bucket "b"
// holds n keys k000000..., a key "empty" with an empty value and a nested
// bucket "nested".
func checkpointTx(tb testing.TB, n int) *bolt.Tx {
	tb.Helper()
	db, err := bolt.Open(filepath.Join(tb.TempDir(), "v.db"), 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range n {
			if err := bk.Put(fmt.Appendf(nil, "k%06d", i), []byte("value")); err != nil {
				return err
			}
		}
		if err := bk.Put([]byte("empty"), []byte{}); err != nil {
			return err
		}
		_, err = bk.CreateBucket([]byte("nested"))
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	btx, err := db.Begin(false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { btx.Rollback() })
	return btx
}

// The lookups of a write view in the checkpoint (one cursor for them
// all) tell a key, an empty value, a nested bucket and an absent key
// apart, as bbolt's Get and Bucket do.
func TestWriteViewCheckpointLookups(t *testing.T) {
	for _, rw := range []bool{true, false} {
		b := kv.NewView(kv.NewLayer(), checkpointTx(t, 3000), rw).Root([]byte("b"))
		for _, k := range []string{"k000000", "k001234", "k002999", "k001234"} {
			if got := string(b.Get([]byte(k))); got != "value" {
				t.Errorf("rw %v: %s = %q, want value", rw, k, got)
			}
		}
		if got := b.Get([]byte("empty")); got == nil || len(got) != 0 {
			t.Errorf("rw %v: empty = %v, want an empty value", rw, got)
		}
		for _, k := range []string{"nested", "k", "k0030000", "zzz", "a"} {
			if got := b.Get([]byte(k)); got != nil {
				t.Errorf("rw %v: %s = %q, want nil", rw, k, got)
			}
		}
		if !rw {
			continue
		}
		if err := b.Put([]byte("nested"), []byte("x")); !errors.Is(err, bolterrors.ErrIncompatibleValue) {
			t.Errorf("put over the nested bucket: %v, want ErrIncompatibleValue", err)
		}
		for _, k := range []string{"empty", "k000001", "new", "nestee"} {
			if err := b.Put([]byte(k), []byte("x")); err != nil {
				t.Errorf("put %s: %v", k, err)
			}
		}
	}
}

// BenchmarkWriteViewGetPut looks up a key of the checkpoint and puts a
// new one, as a write of the batch-id table does for each group.
func BenchmarkWriteViewGetPut(b *testing.B) {
	bk := kv.NewView(kv.NewLayer(), checkpointTx(b, 10_000), true).Root([]byte("b"))
	key := make([]byte, 0, 16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		key = fmt.Appendf(key[:0], "k%06d", i%10_000)
		if bk.Get(key) == nil {
			b.Fatal("no key")
		}
		key = fmt.Appendf(key[:0], "n%06d", i)
		if err := bk.Put(key, []byte("value")); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
