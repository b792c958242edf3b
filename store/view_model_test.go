package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var modelSteps = flag.Int("model.steps", 1500, "operations TestViewModel runs per seed")

// mbucket is a bucket of the model: a plain map.
type mbucket struct {
	recs map[string]string
	seq  uint64
}

// model is the store as plain maps: bucket path ("a", "a/x") → bucket.
type model map[string]*mbucket

func (m model) clone() model {
	out := model{}
	for p, b := range m {
		out[p] = &mbucket{recs: maps.Clone(b.recs), seq: b.seq}
	}
	return out
}

func (m model) children(path string) []string {
	var out []string
	for p := range m {
		if rest, ok := strings.CutPrefix(p, path+"/"); ok && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out
}

func (m model) deleteTree(path string) {
	for p := range m {
		if p == path || strings.HasPrefix(p, path+"/") {
			delete(m, p)
		}
	}
}

var (
	modelRoots = []string{"ma", "mb"}
	modelNames = []string{"x", "y"}
	modelKeys  = []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "x"}
)

// openPath opens the bucket of a model path in tx, nil when absent.
func openPath(tx *Tx, path string) *bucket {
	names := strings.Split(path, "/")
	b := tx.root([]byte(names[0]))
	for _, n := range names[1:] {
		if b == nil {
			return nil
		}
		b = b.Bucket([]byte(n))
	}
	return b
}

// dump reads everything tx holds of the model's buckets, and checks on
// the way that cursors agree both ways and Seek finds what they find.
func dump(t *testing.T, tx *Tx, rng *rand.Rand) model {
	t.Helper()
	out := model{}
	var walk func(path string, b *bucket)
	walk = func(path string, b *bucket) {
		mb := &mbucket{recs: map[string]string{}, seq: b.Sequence()}
		out[path] = mb
		var fwd, back []string
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			fwd = append(fwd, string(k))
			mb.recs[string(k)] = string(v)
		}
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			back = append(back, string(k))
		}
		slices.Reverse(back)
		if !slices.Equal(fwd, back) || !slices.IsSorted(fwd) {
			t.Fatalf("bucket %s: forward %v, backward %v", path, fwd, back)
		}
		for range 3 {
			probe := modelKeys[rng.IntN(len(modelKeys))] + []string{"", "\x00", "5"}[rng.IntN(3)]
			i, _ := slices.BinarySearch(fwd, probe)
			k, v := b.Cursor().Seek([]byte(probe))
			if i == len(fwd) {
				if k != nil {
					t.Fatalf("bucket %s: Seek(%q) = %q, want the end", path, probe, k)
				}
			} else if string(k) != fwd[i] || string(v) != mb.recs[fwd[i]] {
				t.Fatalf("bucket %s: Seek(%q) = %q, want %q", path, probe, k, fwd[i])
			}
			if got, want := b.Get([]byte(probe)), slices.Contains(fwd, probe); (got != nil) != want || want && string(got) != mb.recs[probe] {
				t.Fatalf("bucket %s: Get(%q) = %q", path, probe, got)
			}
			// A cursor that turns round.
			c := b.Cursor()
			k, _ = c.Seek([]byte(probe))
			pk, _ := c.Prev()
			if i > 0 && string(pk) != fwd[i-1] || i == 0 && pk != nil && k != nil {
				t.Fatalf("bucket %s: Seek(%q) then Prev = %q, want %v", path, probe, pk, fwd[:i])
			}
		}
		var kids []string
		if err := b.ForEachBucket(func(name []byte) error {
			kids = append(kids, string(name))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, n := range kids {
			walk(path+"/"+n, b.Bucket([]byte(n)))
		}
		if len(kids) == 0 && b.KeyN() != len(fwd) {
			t.Fatalf("bucket %s: KeyN %d, %d records", path, b.KeyN(), len(fwd))
		}
	}
	for _, r := range modelRoots {
		if b := tx.root([]byte(r)); b != nil {
			walk(r, b)
		}
	}
	return out
}

func sameModel(t *testing.T, what string, got, want model) {
	t.Helper()
	paths := func(m model) []string { return slices.Sorted(maps.Keys(m)) }
	if !slices.Equal(paths(got), paths(want)) {
		t.Fatalf("%s: buckets %v, want %v", what, paths(got), paths(want))
	}
	for p, w := range want {
		g := got[p]
		if !maps.Equal(g.recs, w.recs) || g.seq != w.seq {
			t.Fatalf("%s: bucket %s = %v seq %d, want %v seq %d", what, p, g.recs, g.seq, w.recs, w.seq)
		}
	}
}

// snapshotReader is a View held open: it reads when told to.
type snapshotReader struct {
	want model
	read chan struct{}
	got  chan model
}

// TestViewModel runs random writes (records, nested buckets created and
// deleted, sequences) against a plain map model, with checkpoints and
// reopens between them, and compares every bucket, cursor and Seek with
// the model; snapshots taken mid-way are read after later writes and
// must still show what was there when they began.
func TestViewModel(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 27))
			path := filepath.Join(t.TempDir(), "m.db")
			// Checkpoints only when the test asks: a held snapshot keeps
			// a checkpoint that grows the file waiting.
			opts := Options{CheckpointInterval: time.Hour, CheckpointBytes: 1 << 40}
			db, err := Open(context.Background(), path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if db != nil {
					db.Close(context.Background())
				}
			}()
			m := model{}
			var snaps []*snapshotReader
			readSnaps := func() {
				for _, s := range snaps {
					s.read <- struct{}{}
					sameModel(t, "snapshot", <-s.got, s.want)
				}
				snaps = nil
			}
			for step := range *modelSteps {
				switch r := rng.IntN(100); {
				case r < 2:
					readSnaps()
					if err := db.requestCheckpoint(context.Background()); err != nil {
						t.Fatal(err)
					}
				case r < 3:
					readSnaps()
					if err := db.Close(context.Background()); err != nil {
						t.Fatal(err)
					}
					if db, err = Open(context.Background(), path, opts); err != nil {
						t.Fatal(err)
					}
				case r < 6 && len(snaps) < 3:
					s := &snapshotReader{want: m.clone(), read: make(chan struct{}), got: make(chan model)}
					began := make(chan struct{})
					srng := rand.New(rand.NewPCG(seed, uint64(step)))
					go func() {
						_ = db.View(func(tx *Tx) error {
							close(began)
							<-s.read
							s.got <- dump(t, tx, srng)
							return nil
						})
					}()
					<-began
					snaps = append(snaps, s)
				default:
					next := m.clone()
					fail := rng.IntN(10) == 0
					err := db.Update(context.Background(), func(tx *Tx) error {
						for range 1 + rng.IntN(4) {
							if err := modelOp(tx, next, rng); err != nil {
								return err
							}
						}
						if fail {
							return errors.New("dropped")
						}
						return nil
					})
					switch {
					case fail && err == nil:
						t.Fatal("a failing write succeeded")
					case !fail && err != nil:
						t.Fatalf("step %d: %v", step, err)
					case !fail:
						m = next
					}
				}
				if step%25 == 0 {
					if err := db.View(func(tx *Tx) error { sameModel(t, fmt.Sprintf("step %d", step), dump(t, tx, rng), m); return nil }); err != nil {
						t.Fatal(err)
					}
				}
			}
			readSnaps()
			if err := db.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if db, err = Open(context.Background(), path, opts); err != nil {
				t.Fatal(err)
			}
			if err := db.View(func(tx *Tx) error { sameModel(t, "after reopen", dump(t, tx, rng), m); return nil }); err != nil {
				t.Fatal(err)
			}
			if rep, err := db.Check(context.Background()); err != nil || !rep.OK {
				t.Fatalf("check: %+v %v", rep, err)
			}
		})
	}
}

// modelOp does one random write in tx and in m.
func modelOp(tx *Tx, m model, rng *rand.Rand) error {
	paths := slices.Sorted(maps.Keys(m))
	pick := func() string {
		if len(paths) == 0 || rng.IntN(6) == 0 {
			return modelRoots[rng.IntN(len(modelRoots))]
		}
		return paths[rng.IntN(len(paths))]
	}
	switch r := rng.IntN(100); {
	case r < 10: // create a bucket (top level or nested)
		parent := pick()
		name := modelNames[rng.IntN(len(modelNames))]
		if rng.IntN(3) == 0 {
			parent, name = "", modelRoots[rng.IntN(len(modelRoots))]
		}
		var p string
		var err error
		if parent == "" {
			p = name
			_, err = tx.createRoot([]byte(name))
		} else {
			pb := openPath(tx, parent)
			if pb == nil {
				return nil
			}
			p = parent + "/" + name
			if _, ok := m[parent].recs[name]; ok {
				if _, err := pb.CreateBucketIfNotExists([]byte(name)); err == nil {
					return fmt.Errorf("bucket %s created over a record", p)
				}
				return nil
			}
			_, err = pb.CreateBucketIfNotExists([]byte(name))
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		if m[p] == nil {
			m[p] = &mbucket{recs: map[string]string{}}
		}
	case r < 15: // delete a bucket
		p := pick()
		if m[p] == nil {
			return nil
		}
		var err error
		if i := strings.LastIndexByte(p, '/'); i < 0 {
			err = tx.deleteRoot([]byte(p))
		} else {
			err = openPath(tx, p[:i]).DeleteBucket([]byte(p[i+1:]))
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", p, err)
		}
		m.deleteTree(p)
	case r < 20: // sequence
		p := pick()
		if m[p] == nil {
			return nil
		}
		seq, err := openPath(tx, p).NextSequence()
		if err != nil || seq != m[p].seq+1 {
			return fmt.Errorf("next sequence of %s = %d %v, want %d", p, seq, err, m[p].seq+1)
		}
		m[p].seq = seq
	case r < 35: // delete records, some through a cursor
		p := pick()
		if m[p] == nil {
			return nil
		}
		b := openPath(tx, p)
		if rng.IntN(2) == 0 {
			k := modelKeys[rng.IntN(len(modelKeys))]
			if slices.Contains(m.children(p), k) {
				return nil
			}
			delete(m[p].recs, k)
			return b.Delete([]byte(k))
		}
		c := b.Cursor()
		for k, _ := c.Seek([]byte(modelKeys[rng.IntN(len(modelKeys))])); k != nil && rng.IntN(3) > 0; k, _ = c.Next() {
			delete(m[p].recs, string(k))
			if err := c.Delete(); err != nil {
				return err
			}
		}
	default: // put
		p := pick()
		if m[p] == nil {
			return nil
		}
		k := modelKeys[rng.IntN(len(modelKeys))]
		v := fmt.Sprint(rng.IntN(1000))
		if rng.IntN(8) == 0 {
			v = ""
		}
		err := openPath(tx, p).Put([]byte(k), []byte(v))
		if slices.Contains(m.children(p), k) {
			if err == nil {
				return fmt.Errorf("put %s %s over a bucket succeeded", p, k)
			}
			return nil
		}
		if err != nil {
			return err
		}
		m[p].recs[k] = v
	}
	return nil
}
