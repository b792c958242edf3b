package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/store"
)

func TestGroupRecords(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	update(t, db, func(tx *store.Tx) error {
		for _, g := range []string{"a", "ab"} {
			if err := tx.PutGroup(g, []byte(`{"group_id":"`+g+`"}`)); err != nil {
				return err
			}
			for _, v := range []string{"v1", "v2"} {
				if err := tx.PutGroupVote(g, v, []byte(`{"vote_id":"`+v+`"}`)); err != nil {
					return err
				}
			}
			if err := tx.PutGroupTask(g, "t1", []byte(`{}`)); err != nil {
				return err
			}
		}
		return nil
	})

	t.Run("read back", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			doc, err := tx.Group("ab")
			if err != nil || string(doc) != `{"group_id":"ab"}` {
				t.Errorf("Group(ab) = %s, %v", doc, err)
			}
			if _, err := tx.Group("zz"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Group(zz) error = %v, want ErrNotFound", err)
			}
			if _, err := tx.GroupVote("a", "v9"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GroupVote(a, v9) error = %v, want ErrNotFound", err)
			}
			return nil
		})
	})

	t.Run("children of one group only", func(t *testing.T) {
		var got []string
		view(t, db, func(tx *store.Tx) error {
			return tx.GroupVotes("a", func(g, v string, _ []byte) error {
				got = append(got, g+"/"+v)
				return nil
			})
		})
		if want := []string{"a/v1", "a/v2"}; !slices.Equal(got, want) {
			t.Errorf("votes of a = %v, want %v (not those of ab)", got, want)
		}
		got = nil
		view(t, db, func(tx *store.Tx) error {
			return tx.GroupTasks("", func(g, id string, _ []byte) error {
				got = append(got, g+"/"+id)
				return nil
			})
		})
		if want := []string{"a/t1", "ab/t1"}; !slices.Equal(got, want) {
			t.Errorf("all tasks = %v, want %v", got, want)
		}
	})

	t.Run("bad keys and documents", func(t *testing.T) {
		err := db.Update(t.Context(), func(tx *store.Tx) error { return tx.PutGroupVote("a", "x\x00y", []byte(`{}`)) })
		if !errors.Is(err, store.ErrBadGroupKey) {
			t.Errorf("NUL in an id: %v, want ErrBadGroupKey", err)
		}
		err = db.Update(t.Context(), func(tx *store.Tx) error { return tx.PutGroup("a", []byte(`{not json`)) })
		if err == nil {
			t.Error("a record that is not JSON was stored")
		}
	})

	t.Run("delete a group with everything of it", func(t *testing.T) {
		update(t, db, func(tx *store.Tx) error {
			_, _, err := tx.AppendGroupEvent("a", "e1", 0, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
			if err != nil {
				return err
			}
			return tx.DeleteGroup("a")
		})
		view(t, db, func(tx *store.Tx) error {
			if _, err := tx.Group("a"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("group a still there: %v", err)
			}
			n := 0
			_ = tx.GroupVotes("", func(string, string, []byte) error { n++; return nil })
			if n != 2 {
				t.Errorf("%d votes left, want ab's 2", n)
			}
			if evs, _ := tx.GroupEvents("a", 0, 10); len(evs) != 0 || tx.LastGroupEvent("a") != 0 {
				t.Errorf("events of a left: %v", evs)
			}
			return nil
		})
		update(t, db, func(tx *store.Tx) error {
			_, dup, err := tx.AppendGroupEvent("a", "e1", 0, func(uint64) ([]byte, error) { return []byte(`{}`), nil })
			if dup {
				t.Error("an event id of a deleted group still counts as a duplicate")
			}
			return err
		})
	})
}

func TestGroupEvents(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	const keep = 5
	appendEv := func(id string) (uint64, bool) {
		var seq uint64
		var dup bool
		update(t, db, func(tx *store.Tx) error {
			var err error
			seq, dup, err = tx.AppendGroupEvent("g", id, keep, func(s uint64) ([]byte, error) {
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
		view(t, db, func(tx *store.Tx) error {
			evs, err := tx.GroupEvents("g", 0, 100)
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%d:%s", e.Seq, e.ID))
				if want := fmt.Sprintf(`{"seq":%d,"id":%q}`, e.Seq, e.ID); string(e.Doc) != want {
					t.Errorf("doc = %s, want %s", e.Doc, want)
				}
			}
			if n := tx.LastGroupEvent("g"); n != 8 {
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
		view(t, db, func(tx *store.Tx) error {
			evs, err := tx.GroupEvents("g", 6, 2)
			if err != nil || len(evs) != 2 || evs[0].Seq != 7 || evs[1].Seq != 8 {
				t.Errorf("after 6, limit 2 = %v, %v", evs, err)
			}
			evs, err = tx.GroupEvents("other", 0, 10)
			if err != nil || len(evs) != 0 {
				t.Errorf("events of an unknown group = %v, %v", evs, err)
			}
			return nil
		})
	})
}
