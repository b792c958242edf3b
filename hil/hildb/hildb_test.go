package hildb_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/store/storetest"
	"github.com/synapse-edge/synapse/wire"
)

func hilRequest(t *testing.T, state string, closed time.Time) *hildb.Request {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatalf("uuid: %v", err)
	}
	r := &hildb.Request{TaskID: id.String(), TaskType: "confirm", Level: 1, State: state,
		Request: &wire.TaskNeedHumanPayload{TaskID: id.String(), Reason: wire.Reason{Code: "c", Message: "m"}, EscalationLevel: 1}}
	if state != hildb.Pending {
		r.ClosedAt = closed
	}
	return r
}

func TestHILRequests(t *testing.T) {
	db := storetest.Open(t)
	t.Run("empty file", func(t *testing.T) {
		storetest.View(t, db, func(tx *store.Tx) error {
			if _, err := hildb.GetRequest(tx, "x"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("HILRequest on an empty file: %v, want ErrNotFound", err)
			}
			list, next, err := hildb.Requests(tx, false, "", 10)
			if err != nil || len(list) != 0 || next != "" {
				t.Errorf("HILRequests = %v, %q, %v; want nothing", list, next, err)
			}
			return nil
		})
	})
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []*hildb.Request
	for i := range 6 {
		st := hildb.Pending
		if i%2 == 1 {
			st = hildb.Decided
		}
		all = append(all, hilRequest(t, st, base.Add(time.Duration(i)*time.Hour)))
	}
	storetest.Update(t, db, func(tx *store.Tx) error {
		for _, r := range all {
			if err := hildb.PutRequest(tx, r); err != nil {
				return err
			}
			for _, step := range []string{"created", "escalated"} {
				if err := hildb.AppendStep(tx, &hildb.Step{TaskID: r.TaskID, Step: step, At: base}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	ids := func(rs []*hildb.Request) []string {
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
			var page []*hildb.Request
			var next string
			storetest.View(t, db, func(tx *store.Tx) error {
				var err error
				page, next, err = hildb.Requests(tx, false, after, 4)
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
		storetest.View(t, db, func(tx *store.Tx) error {
			list, _, err := hildb.Requests(tx, true, "", 100)
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
		storetest.View(t, db, func(tx *store.Tx) error {
			steps, err := hildb.Steps(tx, all[3].TaskID)
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
			return hildb.PutRequest(tx, &hildb.Request{TaskID: "a\x00b", State: hildb.Pending})
		})
		if !errors.Is(err, hildb.ErrBadKey) {
			t.Errorf("PutHILRequest with a NUL: %v, want ErrBadHILKey", err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		// Decided: all[1] (closed at +1h), all[3] (+3h), all[5] (+5h).
		// A pending request that becomes pending again drops out of the index.
		again := *all[5]
		again.State, again.ClosedAt = hildb.Pending, time.Time{}
		storetest.Update(t, db, func(tx *store.Tx) error { return hildb.PutRequest(tx, &again) })
		var n int
		storetest.Update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = hildb.Prune(tx, base.Add(2*time.Hour), 100, 100)
			return err
		})
		if n != 1 {
			t.Fatalf("pruned %d, want 1 (the one closed before the cutoff)", n)
		}
		storetest.Update(t, db, func(tx *store.Tx) error {
			var err error
			n, err = hildb.Prune(tx, base, 0, 100)
			return err
		})
		if n != 1 {
			t.Fatalf("pruned %d beyond keep 0, want 1 (all[3])", n)
		}
		storetest.View(t, db, func(tx *store.Tx) error {
			for i, r := range all {
				_, err := hildb.GetRequest(tx, r.TaskID)
				gone := i == 1 || i == 3
				if gone != errors.Is(err, store.ErrNotFound) {
					t.Errorf("request %d: err %v, want gone=%v", i, err, gone)
				}
				steps, _ := hildb.Steps(tx, r.TaskID)
				if gone != (len(steps) == 0) {
					t.Errorf("request %d: %d steps, want gone=%v", i, len(steps), gone)
				}
			}
			return nil
		})
	})
}

// TestLayout: the records are where and as the store kept them before
// they left it (the file of an older agent reads the same): a request,
// its step and its retention index entry, as raw bytes at their paths.
func TestLayout(t *testing.T) {
	db := storetest.Open(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	// The records as the store's own code wrote them (json.Marshal of the
	// same types), keyed as it keyed them.
	oldReq := `{"task_id":"t1","task_type":"confirm","entered_at":"2030-01-02T03:04:05Z","request":null,"level":2,"deadline":"0001-01-01T00:00:00Z","created_at":"0001-01-01T00:00:00Z","state":"decided","decision":{"action":"approve","decided_by":"op","level":2,"at":"2030-01-02T03:04:05Z"},"closed_at":"2030-01-02T03:04:05Z"}`
	oldStep := `{"seq":1,"task_id":"t1","at":"2030-01-02T03:04:05Z","step":"decided","level":2}`
	storetest.Update(t, db, func(tx *store.Tx) error {
		r := &hildb.Request{TaskID: "t1", TaskType: "confirm", EnteredAt: at, Level: 2, State: hildb.Decided,
			Decision: &hildb.Decision{Action: "approve", DecidedBy: "op", Level: 2, At: at}, ClosedAt: at}
		if err := hildb.PutRequest(tx, r); err != nil {
			return err
		}
		return hildb.AppendStep(tx, &hildb.Step{TaskID: "t1", At: at, Step: "decided", Level: 2})
	})
	storetest.View(t, db, func(tx *store.Tx) error {
		raw := func(path []string, key []byte) string {
			v, err := store.RawRecords(path...).Get(tx, key)
			if err != nil {
				t.Fatalf("%v %q: %v", path, key, err)
			}
			return string(*v)
		}
		if got := raw([]string{"hil", "requests"}, []byte("t1")); got != oldReq {
			t.Errorf("request record:\n%s\nwant:\n%s", got, oldReq)
		}
		stepKey := append([]byte("t1\x00"), 0, 0, 0, 0, 0, 0, 0, 1)
		if got := raw([]string{"hil", "steps"}, stepKey); got != oldStep {
			t.Errorf("step record:\n%s\nwant:\n%s", got, oldStep)
		}
		closedKey := append(binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano())), "t1"...)
		if got := raw([]string{"hil", "closed"}, closedKey); got != "" {
			t.Errorf("closed index entry = %q, want empty", got)
		}
		return nil
	})
}
