package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckT1Seen: db check passes the batch-id groups the ingest writes
// and names each malformed one (which dedup would read as "nothing seen").
func TestCheckT1Seen(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	now := time.Now().UnixNano()
	if err := db.Update(ctx, func(tx *Tx) error {
		for _, id := range []string{"gw-7-10", "gw-7-11", "gw-8-1", "x"} {
			if _, err := tx.T1Seen("dev", id, now); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := db.Check(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("Check of healthy groups = %+v, %v", rep, err)
	}

	bad := map[string][]byte{
		"no-separator":   make([]byte, t1SeenValueLen),
		"dev\x00short":   {1, 2, 3},
		"dev\x00empty-s": append([]byte{0, 0, 0, 0, 0, 0, 0, 1}, make([]byte, 32)...),
	}
	bad["no-separator"][8] = 1
	if err := db.Update(ctx, func(tx *Tx) error {
		b := tx.root(bucketT1SeenG)
		for k, v := range bad {
			if err := b.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rep, err = db.Check(ctx)
	if err != nil || rep.OK {
		t.Fatalf("Check with malformed groups = %+v, %v; want not OK", rep, err)
	}
	all := strings.Join(rep.Errors, "\n")
	for _, want := range []string{`"no-separator": the key has no scope separator`, `"dev\x00short": 3 bytes, want 40`, `"dev\x00empty-s": no id in the set`} {
		if !strings.Contains(all, want) {
			t.Errorf("errors\n%s\nwant one with %s", all, want)
		}
	}
	if len(rep.Errors) != len(bad) {
		t.Errorf("%d errors, want %d (one per malformed group):\n%s", len(rep.Errors), len(bad), all)
	}
}
