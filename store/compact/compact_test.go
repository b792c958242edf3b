package compact

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// fill writes n final tasks (each with an event and an outbox item, a
// nested bucket) and prunes all but keep, as a burst past the
// retention limit leaves a file; some writes stay in the commit log.
func fill(t *testing.T, path string, n, keep int) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Add(-time.Hour)
	for i := 0; i < n; i += 500 {
		err := db.Update(ctx, func(tx *store.Tx) error {
			for j := i; j < min(i+500, n); j++ {
				at := now.Add(time.Duration(j) * time.Millisecond)
				id := uuid.Must(uuid.NewV7()).String()
				task := &wire.Task{ID: id, Type: "echo", Status: wire.StatusCompleted, Payload: wire.JSONValue(fmt.Sprintf(`{"n":%d,"pad":"%0200d"}`, j, j)),
					CreatedAt: at, UpdatedAt: at,
					History: []wire.Transition{{From: wire.StatusIdle, Status: wire.StatusCompleted, At: wire.Time{Time: at}}}}
				if err := tx.CreateTask(task); err != nil {
					return err
				}
				if err := tx.AppendEvent(&wire.Event{TaskID: id, Seq: 2, Type: "log", At: wire.Time{Time: at}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if keep < n {
		err := db.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.PruneFinished(now.Add(-time.Hour), keep, n)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A crash-like end: the writes since the last checkpoint stay in
	// the log (Close would checkpoint them).
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.PutMeta("compact_test", []byte("in the log")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// dump is a digest of every bucket, key, value and sequence of the
// file at path, after the store brought it up to date with its log.
func dump(t *testing.T, path string) (map[string][32]byte, int) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	var tasks int
	if err := db.View(func(tx *store.Tx) error { tasks = tx.CountTasks(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := map[string][32]byte{}
	var walk func(prefix string, bk *bolt.Bucket)
	walk = func(prefix string, bk *bolt.Bucket) {
		out[prefix+"#seq"] = sha256.Sum256([]byte(strconv.FormatUint(bk.Sequence(), 10)))
		_ = bk.ForEach(func(k, v []byte) error {
			if v == nil && bk.Bucket(k) != nil {
				walk(prefix+"/"+string(k), bk.Bucket(k))
				return nil
			}
			out[prefix+"/"+string(k)] = sha256.Sum256(v)
			return nil
		})
	}
	_ = b.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, bk *bolt.Bucket) error { walk(string(name), bk); return nil })
	})
	return out, tasks
}

func same(t *testing.T, got, want map[string][32]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("record %q differs", k)
		}
	}
}

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func checkClean(t *testing.T, path string) {
	t.Helper()
	rep, err := store.CheckFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("db check: %v", rep.Errors)
	}
}

func TestCompactKeepsEverythingAndShrinks(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	fill(t, path, 3000, 500)
	want, tasks := dump(t, path)
	if tasks != 500 {
		t.Fatalf("%d tasks before the compaction, want 500", tasks)
	}
	before := size(t, path)
	var calls int
	var last, total int64
	res, err := File(context.Background(), path, Options{Progress: func(d, tot int64) { calls, last, total = calls+1, d, tot }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d -> %d bytes, %d records, %s", res.Before, res.After, res.Keys, res.Took)
	if res.Before != before || res.After != size(t, path) {
		t.Errorf("result %+v, file sizes %d then %d", res, before, size(t, path))
	}
	if res.After*2 > res.Before {
		t.Errorf("compaction of a file pruned from 3,000 tasks to 500: %d -> %d bytes", res.Before, res.After)
	}
	if calls < 2 || last != total || total != res.Keys {
		t.Errorf("progress: %d calls, last %d of %d (copied %d)", calls, last, total, res.Keys)
	}
	checkClean(t, path)
	got, _ := dump(t, path)
	same(t, got, want)
	if _, err := os.Stat(path + TempSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the copy is left behind: %v", err)
	}
}

// TestCompactRefusesServedFile: a store open on the file (an agent
// serving it) makes File fail with store.ErrLocked, the file untouched.
func TestCompactRefusesServedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	fill(t, path, 200, 200)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	before := size(t, path)
	if _, err := File(context.Background(), path, Options{}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("compact a served file: %v, want store.ErrLocked", err)
	}
	if size(t, path) != before {
		t.Errorf("the served file changed size")
	}
	if _, err := os.Stat(path + TempSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a copy was started: %v", err)
	}
}

// TestCompactStoppedAtEachStep stops a compaction at each of its steps
// (as a kill there would) and opens the file: everything is in it, and
// the next compaction runs and removes the copy left behind.
func TestCompactStoppedAtEachStep(t *testing.T) {
	for _, at := range []string{"opened", "copying", "synced", "renamed"} {
		t.Run(at, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), store.FileName)
			fill(t, path, 2000, 1000)
			want, _ := dump(t, path)
			_, err := File(context.Background(), path, Options{txBytes: 64 << 10, crash: func(step string) error {
				if step == at {
					return errors.New("crash")
				}
				return nil
			}})
			if !isCrash(err) {
				t.Fatalf("stopped at %s: %v", at, err)
			}
			checkClean(t, path)
			got, _ := dump(t, path)
			same(t, got, want)
			if _, err := File(context.Background(), path, Options{}); err != nil {
				t.Fatalf("the next compaction: %v", err)
			}
			got, _ = dump(t, path)
			same(t, got, want)
			if _, err := os.Stat(path + TempSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the copy is left behind: %v", err)
			}
		})
	}
}

// TestCompactKill9 kills a compaction process (this test binary, run
// as one) at random moments; after each the file opens with everything
// and db check is clean.
func TestCompactKill9(t *testing.T) {
	if p := os.Getenv("COMPACT_CHILD"); p != "" {
		if _, err := File(context.Background(), p, Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), store.FileName)
	fill(t, path, 3000, 1500)
	want, _ := dump(t, path)
	// The first run, whole, tells how long a compaction takes here.
	start := time.Now()
	cmd := agenttest.Command(os.Args[0], "-test.run", "^TestCompactKill9$") // under the emulator on a cross run
	cmd.Env = append(os.Environ(), "COMPACT_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compaction process: %v\n%s", err, out)
	}
	whole := time.Since(start)
	got, _ := dump(t, path)
	same(t, got, want)
	killed := 0
	for i := range 8 {
		cmd := agenttest.Command(os.Args[0], "-test.run", "^TestCompactKill9$") // under the emulator on a cross run
		cmd.Env = append(os.Environ(), "COMPACT_CHILD="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(whole))))
		if cmd.Process.Kill() == nil {
			killed++
		}
		_ = cmd.Wait()
		checkClean(t, path)
		got, _ := dump(t, path)
		same(t, got, want)
		_ = i
	}
	t.Logf("a compaction takes %s; %d of 8 runs killed on the way", whole, killed)
}
