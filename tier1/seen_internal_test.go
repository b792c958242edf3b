package tier1

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
)

// markSeen runs seen for each id of scope in one write and returns the
// answers.
func markSeen(t *testing.T, db *store.DB, scope string, at int64, ids ...string) []bool {
	t.Helper()
	var got []bool
	storetest.Update(t, db, func(tx *store.Tx) error {
		got = got[:0]
		d, err := openDedup(tx)
		if err != nil {
			return err
		}
		for _, id := range ids {
			s, err := d.seen(scope, id, at)
			if err != nil {
				return err
			}
			got = append(got, s)
		}
		return d.flush()
	})
	return got
}

func TestDedupAcrossWritesAndRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 40 {
		ids = append(ids, fmt.Sprintf("gw-%d", i)) // groups "gw-", "gw-1", "gw-2", "gw-3"
	}
	ids = append(ids, "x", "y", "\xff", "gw-", "random-5f1c") // one-byte ids, odd bytes, other groups
	if got := markSeen(t, db, "a", 100, ids...); fmt.Sprint(got) != fmt.Sprint(make([]bool, len(ids))) {
		t.Fatalf("first write: %v, want all new", got)
	}
	// The same ids again in one write, each twice: all seen; another scope: new.
	again := append(append([]string{}, ids...), ids...)
	for i, s := range markSeen(t, db, "a", 200, again...) {
		if !s {
			t.Fatalf("second write: %q not seen", again[i])
		}
	}
	if got := markSeen(t, db, "b", 200, "gw-1", "gw-1"); !(!got[0] && got[1]) {
		t.Fatalf("scope b: %v, want new then seen (a repeat within one write)", got)
	}
	if got := markSeen(t, db, "a", 300, "gw-40", "gw-41", "gw-4"); got[0] || got[1] || !got[2] {
		t.Fatalf("neighbours: %v, want new, new, seen", got)
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db = storetest.OpenPath(t, path)
	if got := markSeen(t, db, "a", 400, "gw-7", "x", "gw-42"); !got[0] || !got[1] || got[2] {
		t.Fatalf("after reopening: %v, want seen, seen, new", got)
	}
}

// A write that fails leaves no mark: the store runs the other writes of
// its transaction again, and the failed one's ids stay new.
func TestDedupRolledBack(t *testing.T) {
	db := storetest.Open(t)
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		d, err := openDedup(tx)
		if err != nil {
			return err
		}
		if _, err := d.seen("a", "b-1", 1); err != nil {
			return err
		}
		if err := d.flush(); err != nil {
			return err
		}
		return fmt.Errorf("refused")
	})
	if err == nil {
		t.Fatal("the failing write succeeded")
	}
	if got := markSeen(t, db, "a", 2, "b-1"); got[0] {
		t.Fatal("a rolled back mark survived")
	}
}

func TestPruneSeen(t *testing.T) {
	db := storetest.Open(t)
	markSeen(t, db, "a", 100, "old-1", "old-2")
	markSeen(t, db, "a", 300, "mix-1")
	markSeen(t, db, "a", 100, "mix-2") // the group's newest mark stays 300
	var n int
	storetest.Update(t, db, func(tx *store.Tx) (err error) {
		n, err = pruneSeen(tx, 200, 100)
		return err
	})
	if n != 1 {
		t.Fatalf("pruned %d records, want 1 (the group of old-1 and old-2)", n)
	}
	if got := markSeen(t, db, "a", 400, "old-1", "mix-1", "mix-2"); got[0] || !got[1] || !got[2] {
		t.Fatalf("after pruning: %v, want new, seen, seen", got)
	}
}

// A file of schema 2 has the batch-id table of one record per id
// (t1_seen): its ids are still seen, and pruning empties and drops it.
func TestDedupReadsSchema2Table(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Update(t, db, func(tx *store.Tx) error {
		for id, at := range map[string]uint64{"v2-1": 100, "v2-2": 300} {
			v := binary.BigEndian.AppendUint64(nil, at)
			if err := store.RawRecords("t1_seen").Put(tx, []byte("a\x00"+id), &v); err != nil {
				return err
			}
		}
		return nil
	})
	// Closed and opened again, the table is read from the file.
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db = storetest.OpenPath(t, path)
	if got := markSeen(t, db, "a", 400, "v2-1", "v2-2", "v2-3", "v2-1"); !got[0] || !got[1] || got[2] || !got[3] {
		t.Fatalf("schema 2 ids: %v, want seen, seen, new, seen", got)
	}
	prune := func(before int64) { t.Helper(); pruneSeenIn(t, db, before) }
	prune(200)
	if got := markSeen(t, db, "a", 400, "v2-1", "v2-2"); got[0] || !got[1] {
		t.Fatalf("after pruning before 200: %v, want new, seen", got)
	}
	prune(1000)
	if got := markSeen(t, db, "a", 2000, "v2-2"); got[0] {
		t.Fatal("v2-2 is still seen after every record was pruned")
	}
	storetest.View(t, db, func(tx *store.Tx) error {
		if store.RawRecords("t1_seen").Raw(tx).Exists() {
			t.Error("the emptied schema 2 table is still there")
		}
		return nil
	})
}

// TestCheckRecords: db check passes the batch-id groups the ingest writes
// and names each malformed one (which the dedup would read as "nothing
// seen").
func TestCheckRecords(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	now := time.Now().UnixNano()
	markSeen(t, db, "dev", now, "gw-7-10", "gw-7-11", "gw-8-1", "x")
	rep, err := db.Check(ctx, CheckRecords)
	if err != nil || !rep.OK {
		t.Fatalf("Check of healthy groups = %+v, %v", rep, err)
	}

	bad := map[string][]byte{
		"no-separator":        make([]byte, seenValueLen),
		"dev\x00short\x00b":   {1, 2, 3},
		"dev\x00empty-s\x00b": append([]byte{0, 0, 0, 0, 0, 0, 0, 1}, make([]byte, 32)...),
		"dev\x00gw-\x0512d":   make([]byte, digitValueLen), // says five digits, holds two
		"dev\x00gw-\x0212x":   make([]byte, seenValueLen),  // no kind
		"dev\x00gw-\x0212d":   make([]byte, seenValueLen),  // a byte group's size
		"dev\x00gw-\x0213d":   make([]byte, digitValueLen), // 100 and up
	}
	bad["dev\x00gw-\x0512d"][8] = 1
	bad["dev\x00gw-\x0212x"][8] = 1
	bad["dev\x00gw-\x0212d"][8] = 1
	bad["dev\x00gw-\x0213d"][digitValueLen-1] = 0x10
	bad["no-separator"][8] = 1
	storetest.Update(t, db, func(tx *store.Tx) error {
		for k, v := range bad {
			if err := seenRecords.Put(tx, []byte(k), &v); err != nil {
				return err
			}
		}
		return nil
	})
	if rep, err := db.Check(ctx); err != nil || !rep.OK {
		t.Errorf("Check without tier-1's check = %+v, %v; want OK (the store does not read tier-1's records)", rep, err)
	}
	rep, err = db.Check(ctx, CheckRecords)
	if err != nil || rep.OK {
		t.Fatalf("Check with malformed groups = %+v, %v; want not OK", rep, err)
	}
	all := strings.Join(rep.Errors, "\n")
	for _, want := range []string{`"no-separator": the key has no scope separator`, `"dev\x00short\x00b": 3 bytes, want 40`, `"dev\x00empty-s\x00b": no id in the set`,
		`"dev\x00gw-\x0512d": the key's digit count does not match its digits`, `"dev\x00gw-\x0212x": the key ends in no kind of group`,
		`"dev\x00gw-\x0212d": 40 bytes, want 21`, `"dev\x00gw-\x0213d": the set holds numbers past 99`} {
		if !strings.Contains(all, want) {
			t.Errorf("errors\n%s\nwant one with %s", all, want)
		}
	}
	if len(rep.Errors) != len(bad) {
		t.Errorf("%d errors, want %d (one per malformed group):\n%s", len(rep.Errors), len(bad), all)
	}
}

// A counting sender's groups sort in the order it counts, across the
// points where its counter gains a digit, so that its new groups are
// appended to the table.
func TestOrderedHeadSortsACounter(t *testing.T) {
	var prev []byte
	for _, n := range []int64{1, 9, 10, 11, 99, 100, 101, 999, 1000, 1009, 1010, 9999, 10000, 123456, 999999, 1000000, 10000000000} {
		id := "gw-7-0a1b2c3d-" + strconv.FormatInt(n, 10)
		k, _ := groupKey(nil, "scope", id)
		if prev != nil && bytes.Compare(prev, k) > 0 {
			t.Errorf("the group of %s (%q) sorts before the last one (%q)", id, k, prev)
		}
		if !isOrderedHead(k[len("scope\x00") : len(k)-1]) {
			t.Errorf("isOrderedHead(%q) = false", k)
		}
		prev = k
	}
}

// FuzzOrderedHead: two heads never share a key, and every key reads as
// one (db check's test of it); two batch ids never share a group and a
// place in its set.
func FuzzOrderedHead(f *testing.F) {
	f.Add("gw-7-123", "gw-7-12")
	f.Add("a\x031", "a1")
	f.Add("x", "x\x00")
	f.Add(strings.Repeat("9", 40), strings.Repeat("9", 33))
	f.Add("gw-12", "gw-012")
	f.Add("x12", "x1\x32")
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := orderedHead(nil, a), orderedHead(nil, b)
		if a != b && bytes.Equal(ka, kb) {
			t.Fatalf("%q and %q share the key %q", a, b, ka)
		}
		if !isOrderedHead(ka) {
			t.Fatalf("isOrderedHead(%q) of %q = false", ka, a)
		}
		if a == "" || b == "" {
			return
		}
		ga, sa := groupKey(nil, "s", a)
		gb, sb := groupKey(nil, "s", b)
		if a != b && sa == sb && bytes.Equal(ga, gb) {
			t.Fatalf("%q and %q share the group %q and its place %d", a, b, ga, sa)
		}
		if k := ga[len(ga)-1]; k == digitGroup && sa > 99 || !isOrderedHead(ga[2:len(ga)-1]) {
			t.Fatalf("group %q, place %d of %q", ga, sa, a)
		}
	})
}

// A file of schema 3 to 8 has the batch-id groups keyed by the plain head
// (t1_seen_g): its ids are still seen, new ones go to t1_seen_o, and
// pruning empties and drops the old table.
func TestDedupReadsSchema3Table(t *testing.T) {
	db := storetest.Open(t)
	storetest.Update(t, db, func(tx *store.Tx) error {
		for head, at := range map[string]uint64{"gw-1": 100, "gw-2": 300} {
			v := make([]byte, seenValueLen)
			binary.BigEndian.PutUint64(v, at)
			v[8+'5'>>3] |= 1 << ('5' & 7) // gw-15, gw-25
			if err := seenV3Records.Put(tx, []byte("a\x00"+head), &v); err != nil {
				return err
			}
		}
		return nil
	})
	if got := markSeen(t, db, "a", 400, "gw-15", "gw-25", "gw-16", "gw-15", "gw-16"); !got[0] || !got[1] || got[2] || !got[3] || !got[4] {
		t.Fatalf("schema 3 ids: %v, want seen, seen, new, seen, seen", got)
	}
	storetest.View(t, db, func(tx *store.Tx) error {
		n := 0
		_ = seenV3Records.Raw(tx).Scan(nil, func(_, _ []byte) error { n++; return nil })
		if n != 2 {
			t.Errorf("the old table holds %d groups, want its 2 (never written)", n)
		}
		return nil
	})
	prune := func(before int64) { t.Helper(); pruneSeenIn(t, db, before) }
	prune(200)
	if got := markSeen(t, db, "a", 400, "gw-15", "gw-25"); got[0] || !got[1] {
		t.Fatalf("after pruning before 200: %v, want new, seen", got)
	}
	prune(350)
	storetest.View(t, db, func(tx *store.Tx) error {
		if seenV3Records.Raw(tx).Exists() {
			t.Error("the emptied schema 3 table is still there")
		}
		return nil
	})
	if got := markSeen(t, db, "a", 2000, "gw-16", "gw-15"); !got[0] || !got[1] {
		t.Fatalf("ids of the new table after the old one is gone: %v, want seen, seen", got)
	}
}

// A counter's hundred ids from ...00 to ...99 are one record of 21 bytes,
// and each of them is seen once marked, none before.
func TestDigitGroups(t *testing.T) {
	db := storetest.Open(t)
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("c-12%02d", i))
	}
	for i, s := range markSeen(t, db, "a", 100, ids...) {
		if s {
			t.Fatalf("%s seen before it was marked", ids[i])
		}
	}
	for i, s := range markSeen(t, db, "a", 200, append(ids, "c-1300", "c-12")...) {
		if want := i < 100; s != want {
			t.Errorf("%s: seen %v, want %v", append(ids, "c-1300", "c-12")[i], s, want)
		}
	}
	storetest.View(t, db, func(tx *store.Tx) error {
		var got []string
		_ = seenRecords.Raw(tx).Scan(nil, func(k, v []byte) error {
			got = append(got, fmt.Sprintf("%q:%d", k, len(v)))
			return nil
		})
		// c-12 is number 12 of the group of "c-" (no digits).
		want := []string{`"a\x00c-\x00d":21`, `"a\x00c-\x0212d":21`, `"a\x00c-\x0213d":21`}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("records %v, want %v", got, want)
		}
		return nil
	})
}

// pruneSeenIn prunes the batch-id records of db older than before.
func pruneSeenIn(t *testing.T, db *store.DB, before int64) {
	t.Helper()
	storetest.Update(t, db, func(tx *store.Tx) error {
		_, err := pruneSeen(tx, before, 100)
		return err
	})
}
