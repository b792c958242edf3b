package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

func hilRequest(t *testing.T, state string, closed time.Time) *store.HILRequest {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	r := &store.HILRequest{TaskID: id.String(), TaskType: "confirm", Level: 1, State: state,
		Request: &wire.TaskNeedHumanPayload{TaskID: id.String(), Reason: wire.Reason{Code: "c", Message: "m"}, EscalationLevel: 1}}
	if state != store.HILPending {
		r.ClosedAt = closed
	}
	return r
}

func TestHILRequests(t *testing.T) {
	db := openDB(t, tempPath(t), store.Options{})
	t.Run("empty file", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			if _, err := tx.HILRequest("x"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("HILRequest on an empty file: %v, want ErrNotFound", err)
			}
			list, next, err := tx.HILRequests(false, "", 10)
			if err != nil || len(list) != 0 || next != "" {
				t.Errorf("HILRequests = %v, %q, %v; want nothing", list, next, err)
			}
			return nil
		})
	})
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []*store.HILRequest
	for i := range 6 {
		st := store.HILPending
		if i%2 == 1 {
			st = store.HILDecided
		}
		all = append(all, hilRequest(t, st, base.Add(time.Duration(i)*time.Hour)))
	}
	update(t, db, func(tx *store.Tx) error {
		for _, r := range all {
			if err := tx.PutHILRequest(r); err != nil {
				return err
			}
			for _, step := range []string{"created", "escalated"} {
				if err := tx.AppendHILStep(&store.HILStep{TaskID: r.TaskID, Step: step, At: base}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	ids := func(rs []*store.HILRequest) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.TaskID)
		}
		return out
	}
	t.Run("list pages newest first", func(t *testing.T) {
		var got []string
		after := ""
		for range 10 {
			var page []*store.HILRequest
			var next string
			view(t, db, func(tx *store.Tx) error {
				var err error
				page, next, err = tx.HILRequests(false, after, 4)
				return err
			})
			got = append(got, ids(page)...)
			if next == "" {
				break
			}
			after = next
		}
		want := ids(all)
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Errorf("ids = %v, want %v", got, want)
		}
	})
	t.Run("pending only", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			list, _, err := tx.HILRequests(true, "", 100)
			if err != nil {
				return err
			}
			if want := []string{all[4].TaskID, all[2].TaskID, all[0].TaskID}; !slices.Equal(ids(list), want) {
				t.Errorf("pending = %v, want %v", ids(list), want)
			}
			return nil
		})
	})
	t.Run("steps in order with seq", func(t *testing.T) {
		view(t, db, func(tx *store.Tx) error {
			steps, err := tx.HILSteps(all[3].TaskID)
			if err != nil {
				return err
			}
			if len(steps) != 2 || steps[0].Step != "created" || steps[1].Step != "escalated" || steps[1].Seq != steps[0].Seq+1 {
				t.Errorf("steps = %+v", steps)
			}
			return nil
		})
	})
	t.Run("bad key", func(t *testing.T) {
		err := db.Update(t.Context(), func(tx *store.Tx) error {
			return tx.PutHILRequest(&store.HILRequest{TaskID: "a\x00b", State: store.HILPending})
		})
		if !errors.Is(err, store.ErrBadHILKey) {
			t.Errorf("PutHILRequest with a NUL: %v, want ErrBadHILKey", err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		// Decided: all[1] (closed at +1h), all[3] (+3h), all[5] (+5h).
		// A pending request that becomes pending again drops out of the index.
		again := *all[5]
		again.State, again.ClosedAt = store.HILPending, time.Time{}
		update(t, db, func(tx *store.Tx) error { return tx.PutHILRequest(&again) })
		var n int
		update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = tx.PruneHIL(base.Add(2*time.Hour), 100, 100)
			return err
		})
		if n != 1 {
			t.Fatalf("pruned %d, want 1 (the one closed before the cutoff)", n)
		}
		update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = tx.PruneHIL(base, 0, 100)
			return err
		})
		if n != 1 {
			t.Fatalf("pruned %d beyond keep 0, want 1 (all[3])", n)
		}
		view(t, db, func(tx *store.Tx) error {
			for i, r := range all {
				_, err := tx.HILRequest(r.TaskID)
				gone := i == 1 || i == 3
				if gone != errors.Is(err, store.ErrNotFound) {
					t.Errorf("request %d: err %v, want gone=%v", i, err, gone)
				}
				steps, _ := tx.HILSteps(r.TaskID)
				if gone != (len(steps) == 0) {
					t.Errorf("request %d: %d steps, want gone=%v", i, len(steps), gone)
				}
			}
			return nil
		})
	})
}
