package store_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/store"
)

// seen runs Seen for each id of scope in one write and returns the answers.
func seen(t *testing.T, db *store.DB, scope string, at int64, ids ...string) []bool {
	t.Helper()
	var got []bool
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		got = got[:0]
		d, err := tx.T1Dedup()
		if err != nil {
			return err
		}
		for _, id := range ids {
			s, err := d.Seen(scope, id, at)
			if err != nil {
				return err
			}
			got = append(got, s)
		}
		return d.Flush()
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestT1DedupAcrossWritesAndRestarts(t *testing.T) {
	path := tempPath(t)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("gw-%d", i)) // groups "gw-", "gw-1", "gw-2", "gw-3"
	}
	ids = append(ids, "x", "y", "\xff", "gw-", "random-5f1c") // one-byte ids, odd bytes, other groups
	if got := seen(t, db, "a", 100, ids...); fmt.Sprint(got) != fmt.Sprint(make([]bool, len(ids))) {
		t.Fatalf("first write: %v, want all new", got)
	}
	// The same ids again in one write, each twice: all seen; another scope: new.
	again := append(append([]string{}, ids...), ids...)
	for i, s := range seen(t, db, "a", 200, again...) {
		if !s {
			t.Fatalf("second write: %q not seen", again[i])
		}
	}
	if got := seen(t, db, "b", 200, "gw-1", "gw-1"); !(!got[0] && got[1]) {
		t.Fatalf("scope b: %v, want new then seen (a repeat within one write)", got)
	}
	if got := seen(t, db, "a", 300, "gw-40", "gw-41", "gw-4"); got[0] || got[1] || !got[2] {
		t.Fatalf("neighbours: %v, want new, new, seen", got)
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, store.Options{})
	if got := seen(t, db, "a", 400, "gw-7", "x", "gw-42"); !got[0] || !got[1] || got[2] {
		t.Fatalf("after reopening: %v, want seen, seen, new", got)
	}
}

// A write that fails leaves no mark: the store runs the other writes of
// its transaction again, and the failed one's ids stay new.
func TestT1DedupRolledBack(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		d, err := tx.T1Dedup()
		if err != nil {
			return err
		}
		if _, err := d.Seen("a", "b-1", 1); err != nil {
			return err
		}
		if err := d.Flush(); err != nil {
			return err
		}
		return fmt.Errorf("refused")
	})
	if err == nil {
		t.Fatal("the failing write succeeded")
	}
	if got := seen(t, db, "a", 2, "b-1"); got[0] {
		t.Fatal("a rolled back mark survived")
	}
}

func TestT1PruneSeen(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	seen(t, db, "a", 100, "old-1", "old-2")
	seen(t, db, "a", 300, "mix-1")
	seen(t, db, "a", 100, "mix-2") // the group's newest mark stays 300
	var n int
	if err := db.Update(context.Background(), func(tx *store.Tx) (err error) {
		n, err = tx.T1PruneSeen(200, 100)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("pruned %d records, want 1 (the group of old-1 and old-2)", n)
	}
	if got := seen(t, db, "a", 400, "old-1", "mix-1", "mix-2"); got[0] || !got[1] || !got[2] {
		t.Fatalf("after pruning: %v, want new, seen, seen", got)
	}
}

// A file of schema 2 has the batch-id table of one record per id:
// its ids are still seen, and pruning empties and drops it.
func TestT1DedupReadsSchema2Table(t *testing.T) {
	path := tempPath(t)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("meta")).Put([]byte("schema_version"), binary.BigEndian.AppendUint32(nil, 2)); err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte("t1_seen"))
		if err != nil {
			return err
		}
		for id, at := range map[string]uint64{"v2-1": 100, "v2-2": 300} {
			if err := b.Put([]byte("a\x00"+id), binary.BigEndian.AppendUint64(nil, at)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := seen(t, db, "a", 400, "v2-1", "v2-2", "v2-3", "v2-1"); !got[0] || !got[1] || got[2] || !got[3] {
		t.Fatalf("schema 2 ids: %v, want seen, seen, new, seen", got)
	}
	prune := func(before int64) {
		t.Helper()
		if err := db.Update(context.Background(), func(tx *store.Tx) error {
			_, err := tx.T1PruneSeen(before, 100)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	prune(200)
	if got := seen(t, db, "a", 400, "v2-1", "v2-2"); got[0] || !got[1] {
		t.Fatalf("after pruning before 200: %v, want new, seen", got)
	}
	prune(1000)
	if got := seen(t, db, "a", 2000, "v2-2"); got[0] {
		t.Fatal("v2-2 is still seen after every record was pruned")
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	bdb, err = bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	_ = bdb.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("t1_seen")) != nil {
			t.Error("the emptied schema 2 table is still there")
		}
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema_version")); binary.BigEndian.Uint32(v) != store.SchemaVersion {
			t.Errorf("schema_version %x after opening, want %d", v, store.SchemaVersion)
		}
		return nil
	})
}
