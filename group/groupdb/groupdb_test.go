package groupdb_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/group/groupdb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
)

func TestGroupRecords(t *testing.T) {
	db := storetest.Open(t)
	storetest.Update(t, db, func(tx *store.Tx) error {
		for _, g := range []string{"a", "ab"} {
			if err := groupdb.Put(tx, g, []byte(`{"group_id":"`+g+`"}`)); err != nil {
				return err
			}
			for _, v := range []string{"v1", "v2"} {
				if err := groupdb.PutVote(tx, g, v, []byte(`{"vote_id":"`+v+`"}`)); err != nil {
					return err
				}
			}
			if err := groupdb.PutTask(tx, g, "t1", []byte(`{}`)); err != nil {
				return err
			}
		}
		return nil
	})

	t.Run("read back", func(t *testing.T) {
		storetest.View(t, db, func(tx *store.Tx) error {
			doc, err := groupdb.Get(tx, "ab")
			if err != nil || string(doc) != `{"group_id":"ab"}` {
				t.Errorf("Group(ab) = %s, %v", doc, err)
			}
			if _, err := groupdb.Get(tx, "zz"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Group(zz) error = %v, want ErrNotFound", err)
			}
			if _, err := groupdb.Vote(tx, "a", "v9"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GroupVote(a, v9) error = %v, want ErrNotFound", err)
			}
			return nil
		})
	})

	t.Run("children of one group only", func(t *testing.T) {
		var got []string
		storetest.View(t, db, func(tx *store.Tx) error {
			return groupdb.Votes(tx, "a", func(g, v string, _ []byte) error {
				got = append(got, g+"/"+v)
				return nil
			})
		})
		if want := []string{"a/v1", "a/v2"}; !slices.Equal(got, want) {
			t.Errorf("votes of a = %v, want %v (not those of ab)", got, want)
		}
		got = nil
		storetest.View(t, db, func(tx *store.Tx) error {
			return groupdb.Tasks(tx, "", func(g, id string, _ []byte) error {
				got = append(got, g+"/"+id)
				return nil
			})
		})
		if want := []string{"a/t1", "ab/t1"}; !slices.Equal(got, want) {
			t.Errorf("all tasks = %v, want %v", got, want)
		}
	})

	t.Run("bad keys and documents", func(t *testing.T) {
		err := db.Update(t.Context(), func(tx *store.Tx) error { return groupdb.PutVote(tx, "a", "x\x00y", []byte(`{}`)) })
		if !errors.Is(err, groupdb.ErrBadKey) {
			t.Errorf("NUL in an id: %v, want ErrBadGroupKey", err)
		}
		err = db.Update(t.Context(), func(tx *store.Tx) error { return groupdb.Put(tx, "a", []byte(`{not json`)) })
		if err == nil {
			t.Error("a record that is not JSON was stored")
		}
	})

	t.Run("delete a group with everything of it", func(t *testing.T) {
		storetest.Update(t, db, func(tx *store.Tx) error {
			_, _, err := groupdb.AppendEvent(tx, "a", "e1", 0, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
			if err != nil {
				return err
			}
			return groupdb.Delete(tx, "a")
		})
		storetest.View(t, db, func(tx *store.Tx) error {
			if _, err := groupdb.Get(tx, "a"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("group a still there: %v", err)
			}
			n := 0
			_ = groupdb.Votes(tx, "", func(string, string, []byte) error { n++; return nil })
			if n != 2 {
				t.Errorf("%d votes left, want ab's 2", n)
			}
			if evs, _ := groupdb.Events(tx, "a", 0, 10); len(evs) != 0 || groupdb.LastEvent(tx, "a") != 0 {
				t.Errorf("events of a left: %v", evs)
			}
			return nil
		})
		storetest.Update(t, db, func(tx *store.Tx) error {
			_, dup, err := groupdb.AppendEvent(tx, "a", "e1", 0, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
			if dup {
				t.Error("an event id of a deleted group still counts as a duplicate")
			}
			return err
		})
	})
}

func TestGroupEvents(t *testing.T) {
	db := storetest.Open(t)
	const keep = 5
	appendEv := func(id string) (uint64, bool) {
		var seq uint64
		var dup bool
		storetest.Update(t, db, func(tx *store.Tx) error {
			var err error
			seq, dup, err = groupdb.AppendEvent(tx, "g", id, keep, func(s uint64) ([]byte, error) {
				return []byte(fmt.Sprintf(`{"seq":%d,"id":%q}`, s, id)), nil
			})
			return err
		})
		return seq, dup
	}
	for i := 1; i <= 8; i++ {
		if seq, dup := appendEv(fmt.Sprint("e", i)); seq != uint64(i) || dup {
			t.Fatalf("event %d: seq %d dup %v", i, seq, dup)
		}
	}
	t.Run("a repeated id is not added", func(t *testing.T) {
		if seq, dup := appendEv("e7"); seq != 7 || !dup {
			t.Errorf("e7 again: seq %d dup %v, want 7 and a duplicate", seq, dup)
		}
	})
	t.Run("only the last keep are kept", func(t *testing.T) {
		var got []string
		storetest.View(t, db, func(tx *store.Tx) error {
			evs, err := groupdb.Events(tx, "g", 0, 100)
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%d:%s", e.Seq, e.ID))
				if want := fmt.Sprintf(`{"seq":%d,"id":%q}`, e.Seq, e.ID); string(e.Doc) != want {
					t.Errorf("doc = %s, want %s", e.Doc, want)
				}
			}
			if n := groupdb.LastEvent(tx, "g"); n != 8 {
				t.Errorf("last = %d, want 8", n)
			}
			return err
		})
		if want := []string{"4:e4", "5:e5", "6:e6", "7:e7", "8:e8"}; !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
	})
	t.Run("a dropped id may come again", func(t *testing.T) {
		if seq, dup := appendEv("e1"); seq != 9 || dup {
			t.Errorf("e1 after it was dropped: seq %d dup %v, want 9, new", seq, dup)
		}
	})
	t.Run("after and limit", func(t *testing.T) {
		storetest.View(t, db, func(tx *store.Tx) error {
			evs, err := groupdb.Events(tx, "g", 6, 2)
			if err != nil || len(evs) != 2 || evs[0].Seq != 7 || evs[1].Seq != 8 {
				t.Errorf("after 6, limit 2 = %v, %v", evs, err)
			}
			evs, err = groupdb.Events(tx, "other", 0, 10)
			if err != nil || len(evs) != 0 {
				t.Errorf("events of an unknown group = %v, %v", evs, err)
			}
			return nil
		})
	})
}

// TestLayout: the records are where and as the store kept them before
// they left it (the file of an older agent reads the same).
func TestLayout(t *testing.T) {
	db := storetest.Open(t)
	storetest.Update(t, db, func(tx *store.Tx) error {
		if err := groupdb.Put(tx, "g1", []byte(`{"group_id":"g1"}`)); err != nil {
			return err
		}
		if err := groupdb.PutVote(tx, "g1", "v1", []byte(`{"vote_id":"v1"}`)); err != nil {
			return err
		}
		if err := groupdb.PutTask(tx, "g1", "t1", []byte(`{"task_id":"t1"}`)); err != nil {
			return err
		}
		_, _, err := groupdb.AppendEvent(tx, "g1", "e1", 0, func(seq uint64) ([]byte, error) { return []byte(`{"seq":1}`), nil })
		return err
	})
	seq1 := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	for _, c := range []struct {
		path      []string
		key, want string
	}{
		{[]string{"groups"}, "g1", `{"group_id":"g1"}`},
		{[]string{"group_votes"}, "g1\x00v1", `{"vote_id":"v1"}`},
		{[]string{"group_tasks"}, "g1\x00t1", `{"task_id":"t1"}`},
		{[]string{"group_events", "g1"}, string(seq1), "e1\x00" + `{"seq":1}`},
		{[]string{"group_event_ids"}, "g1\x00e1", string(seq1)},
	} {
		storetest.View(t, db, func(tx *store.Tx) error {
			v, err := store.RawRecords(c.path...).Get(tx, []byte(c.key))
			if err != nil || string(*v) != c.want {
				t.Errorf("%v %q = %q, %v; want %q", c.path, c.key, v, err, c.want)
			}
			return nil
		})
	}
	storetest.View(t, db, func(tx *store.Tx) error {
		if n := store.RawRecords("group_events", "g1").Sequence(tx); n != 1 {
			t.Errorf("group_events/g1 sequence %d, want 1", n)
		}
		return nil
	})
	storetest.Update(t, db, func(tx *store.Tx) error { return groupdb.Delete(tx, "g1") })
	storetest.View(t, db, func(tx *store.Tx) error {
		for _, p := range [][]string{{"groups"}, {"group_votes"}, {"group_tasks"}, {"group_event_ids"}, {"group_events", "g1"}} {
			if n := store.RawRecords(p...).Count(tx); n != 0 {
				t.Errorf("%v holds %d records after Delete", p, n)
			}
		}
		return nil
	})
}
