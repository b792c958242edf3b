package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/store"
)

type recT struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

var (
	recTop    = store.JSONRecords[recT]("rec_test")
	recNested = store.JSONRecords[recT]("rec_test_parent", "child")
	recIndex  = store.RawRecords("rec_test_index")
)

// TestRecords writes, reads, scans and deletes typed records in a
// top-level and a nested bucket, before and after a checkpoint and a
// reopen, and in a read transaction of a file that has never had them.
func TestRecords(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, store.Options{})
	view(t, db, func(tx *store.Tx) error {
		if _, err := recTop.Get(tx, []byte("a")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of a missing bucket: %v, want ErrNotFound", err)
		}
		if n := recNested.Count(tx); n != 0 {
			t.Errorf("Count of a missing bucket: %d", n)
		}
		if err := recTop.Put(tx, []byte("a"), &recT{}); err == nil {
			t.Error("Put in a read transaction: no error")
		}
		return recTop.Scan(tx, nil, func([]byte, *recT) error { t.Error("Scan of a missing bucket called fn"); return nil })
	})
	update(t, db, func(tx *store.Tx) error {
		for i := range 5 {
			k := []byte(fmt.Sprintf("k%d", i))
			if err := recTop.Create(tx, k, &recT{Name: string(k), N: i}); err != nil {
				return err
			}
			if err := recNested.Put(tx, k, &recT{N: 10 * i}); err != nil {
				return err
			}
			empty := []byte{}
			if err := recIndex.Put(tx, k, &empty); err != nil {
				return err
			}
		}
		if err := recTop.Create(tx, []byte("k1"), &recT{}); !errors.Is(err, store.ErrExists) {
			t.Errorf("Create of a taken key: %v, want ErrExists", err)
		}
		return recTop.Delete(tx, []byte("k3"))
	})
	check := func(when string) {
		t.Helper()
		view(t, db, func(tx *store.Tx) error {
			var keys []string
			if err := recTop.Scan(tx, []byte("k1"), func(k []byte, v *recT) error {
				if v.Name != string(k) {
					t.Errorf("%s: record %q has name %q", when, k, v.Name)
				}
				keys = append(keys, string(k))
				return nil
			}); err != nil {
				return err
			}
			if want := []string{"k1", "k2", "k4"}; !slices.Equal(keys, want) {
				t.Errorf("%s: Scan from k1: %v, want %v", when, keys, want)
			}
			keys = keys[:0]
			if err := recNested.ScanBack(tx, []byte("k35"), func(k []byte, v *recT) error {
				keys = append(keys, string(k))
				if len(keys) == 2 {
					return store.ErrStop
				}
				return nil
			}); err != nil {
				return err
			}
			if want := []string{"k3", "k2"}; !slices.Equal(keys, want) {
				t.Errorf("%s: ScanBack from k35, two: %v, want %v", when, keys, want)
			}
			if n := recIndex.Count(tx); n != 5 {
				t.Errorf("%s: index Count %d, want 5 (empty values are records)", when, n)
			}
			v, err := recNested.Get(tx, []byte("k4"))
			if err != nil || v.N != 40 {
				t.Errorf("%s: nested Get k4: %+v, %v", when, v, err)
			}
			if _, err := recTop.Get(tx, []byte("k3")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: deleted k3: %v", when, err)
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
	if rep, err := db.Check(context.Background()); err != nil || !rep.OK {
		t.Errorf("db check after the reopen: %+v, %v", rep, err)
	}
}

// TestRecordsBadRecord: a record its codec cannot decode is an error that
// names the bucket and the key, from Get and from Scan.
func TestRecordsBadRecord(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	update(t, db, func(tx *store.Tx) error {
		junk := []byte("{not json")
		return recIndex.Put(tx, []byte("bad"), &junk)
	})
	wrong := store.JSONRecords[recT]("rec_test_index")
	view(t, db, func(tx *store.Tx) error {
		_, err := wrong.Get(tx, []byte("bad"))
		if err == nil || !strings.Contains(err.Error(), `rec_test_index record "bad"`) {
			t.Errorf("Get of a bad record: %v", err)
		}
		err = wrong.Scan(tx, nil, func([]byte, *recT) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "rec_test_index") {
			t.Errorf("Scan over a bad record: %v", err)
		}
		return nil
	})
}

// TestRecordsInDrop: In reaches a nested bucket per owner, Drop deletes
// one with all it holds and leaves its siblings.
func TestRecordsInDrop(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	logs := store.RawRecords("logs")
	update(t, db, func(tx *store.Tx) error {
		for _, owner := range []string{"a", "b"} {
			v := []byte(owner)
			if err := logs.In(owner).Put(tx, []byte("k"), &v); err != nil {
				return err
			}
		}
		if got := logs.In("a").Path(); got != "logs/a" {
			t.Errorf("Path = %q", got)
		}
		return nil
	})
	update(t, db, func(tx *store.Tx) error { return logs.In("a").Drop(tx) })
	update(t, db, func(tx *store.Tx) error { return logs.In("never").Drop(tx) })
	view(t, db, func(tx *store.Tx) error {
		if logs.In("a").Has(tx, []byte("k")) {
			t.Error("logs/a still holds its record after Drop")
		}
		if !logs.In("b").Has(tx, []byte("k")) {
			t.Error("Drop of logs/a took logs/b's record")
		}
		return nil
	})
	if err := db.View(func(tx *store.Tx) error { return logs.In("b").Drop(tx) }); err == nil {
		t.Error("Drop in a read transaction: no error")
	}
}
