package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/google/btree"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A layer is what the store holds in memory over the last checkpoint:
// the final state of every record and bucket written since, in two
// copy-on-write B-trees (github.com/google/btree), so that a snapshot of
// it is a Clone, O(1), and a reader never waits for the writer.
//
// Buckets are named by their path: the names from the top down, each as
// a uvarint length and its bytes. A path is a byte prefix of exactly the
// paths of its descendants, so a bucket and all it holds are one range.
//
// A record of recs holds a value, or nil for a deletion (a tombstone
// over the checkpoint). A bucket state of bkts says whether the bucket
// exists (live), whether the checkpoint's bucket of that path is hidden
// (hide: the bucket was created or deleted here, so nothing of the
// checkpoint's bucket or its descendants shows), and its sequence when
// it was set here.
type Layer struct {
	recs *btree.BTreeG[*rec]
	bkts *btree.BTreeG[*bstate]
}

type rec struct {
	path string
	key  []byte
	val  []byte // nil: deleted
	max  bool   // a search pivot after every key of path
}

type bstate struct {
	path       string
	live, hide bool
	seqSet     bool
	seq        uint64
}

const layerDegree = 16

func recLess(a, b *rec) bool {
	if a.path != b.path {
		return a.path < b.path
	}
	if a.max || b.max {
		return !a.max && b.max
	}
	return bytes.Compare(a.key, b.key) < 0
}

func bstateLess(a, b *bstate) bool { return a.path < b.path }

func NewLayer() *Layer {
	return &Layer{recs: btree.NewG(layerDegree, recLess), bkts: btree.NewG(layerDegree, bstateLess)}
}

// clone is a copy of l that changes independently of it.
func (l *Layer) Clone() *Layer { return &Layer{recs: l.recs.Clone(), bkts: l.bkts.Clone()} }

func (l *Layer) Empty() bool { return l.recs.Len() == 0 && l.bkts.Len() == 0 }

// items is the number of records and bucket states l holds.
func (l *Layer) Items() int { return l.recs.Len() + l.bkts.Len() }

func (l *Layer) state(path string) *bstate {
	s, _ := l.bkts.Get(&bstate{path: path})
	return s
}

// hidden tells whether the checkpoint's bucket path is hidden in l.
func (l *Layer) hidden(path string) bool {
	s := l.state(path)
	return s != nil && s.hide
}

// put sets key of the bucket path; key and val are l's from now on.
func (l *Layer) put(path string, key, val []byte) {
	if val == nil {
		val = []byte{}
	}
	l.recs.ReplaceOrInsert(&rec{path: path, key: key, val: val})
}

// del deletes key of the bucket path: a tombstone over the checkpoint,
// or nothing when the checkpoint's bucket is hidden.
func (l *Layer) del(path string, key []byte) {
	if l.hidden(path) {
		l.recs.Delete(&rec{path: path, key: key})
		return
	}
	l.recs.ReplaceOrInsert(&rec{path: path, key: key})
}

// forget drops what l holds of key of the bucket path: for a key the
// checkpoint's bucket does not hold, a deletion.
func (l *Layer) forget(path string, key []byte) {
	l.recs.Delete(&rec{path: path, key: key})
}

// createBucket makes path a new, empty bucket.
func (l *Layer) createBucket(path string) {
	l.drop(path)
	l.bkts.ReplaceOrInsert(&bstate{path: path, live: true, hide: true})
}

// deleteBucket deletes the bucket path and its descendants.
func (l *Layer) deleteBucket(path string) {
	l.drop(path)
	l.bkts.ReplaceOrInsert(&bstate{path: path, hide: true})
}

// setSeq sets the sequence of the bucket path.
func (l *Layer) setSeq(path string, seq uint64) {
	s := bstate{path: path, live: true}
	if old := l.state(path); old != nil {
		s = *old
	}
	s.seq, s.seqSet = seq, true
	l.bkts.ReplaceOrInsert(&s)
}

// drop forgets everything l holds of the bucket path and its
// descendants.
func (l *Layer) drop(path string) {
	var rs []*rec
	l.recs.AscendGreaterOrEqual(&rec{path: path}, func(r *rec) bool {
		if !strings.HasPrefix(r.path, path) {
			return false
		}
		rs = append(rs, r)
		return true
	})
	for _, r := range rs {
		l.recs.Delete(r)
	}
	var bs []*bstate
	l.bkts.AscendGreaterOrEqual(&bstate{path: path}, func(s *bstate) bool {
		if !strings.HasPrefix(s.path, path) {
			return false
		}
		bs = append(bs, s)
		return true
	})
	for _, s := range bs {
		l.bkts.Delete(s)
	}
}

// childPath is the path of the bucket name inside the bucket parent ("":
// the top level).
func childPath(parent string, name []byte) string {
	var buf [64]byte
	return string(appendChildPath(buf[:0], parent, name))
}

// appendChildPath appends childPath(parent, name) to dst.
func appendChildPath(dst []byte, parent string, name []byte) []byte {
	dst = append(dst, parent...)
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	return append(dst, name...)
}

var errBadPath = errors.New("malformed bucket path")

// cutName cuts the first name off path: the name, the rest, and false
// when path does not begin with a well-formed name. It reads the path
// in place, so that walking one allocates nothing.
func cutName(path string) (name, rest string, ok bool) {
	var n uint64
	for i := 0; i < len(path) && i < binary.MaxVarintLen64; i++ {
		c := path[i]
		n |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return "", "", false // overflows 64 bits
			}
			w := i + 1
			if n == 0 || n > uint64(len(path)-w) {
				return "", "", false
			}
			return path[w : w+int(n)], path[w+int(n):], true
		}
	}
	return "", "", false
}

// pathNames splits a path into its names (which share one copy of it).
func pathNames(path string) ([][]byte, error) {
	if !validPath(path) {
		return nil, errBadPath
	}
	var names [][]byte
	b := []byte(path)
	for rest := path; len(rest) > 0; {
		name, next, _ := cutName(rest)
		at := len(path) - len(next) - len(name)
		names = append(names, b[at:at+len(name):at+len(name)])
		rest = next
	}
	return names, nil
}

// validPath tells whether path is one name or more, each well-formed.
func validPath(path string) bool {
	for rest := path; len(rest) > 0; {
		_, next, ok := cutName(rest)
		if !ok {
			return false
		}
		rest = next
	}
	return path != ""
}

// parentPath is the path of the bucket that holds path ("" at the top,
// and for a malformed path).
func parentPath(path string) string {
	parent := 0 // where the last name's length begins
	for rest := path; len(rest) > 0; {
		_, next, ok := cutName(rest)
		if !ok {
			return ""
		}
		if len(next) > 0 {
			parent = len(path) - len(next)
		}
		rest = next
	}
	return path[:parent]
}

// printPath is a path for an error message.
func printPath(path string) string {
	names, err := pathNames(path)
	if err != nil {
		return fmt.Sprintf("%q", path)
	}
	var s []string
	for _, n := range names {
		s = append(s, fmt.Sprintf("%q", n))
	}
	return strings.Join(s, "/")
}

// boltParent is a bbolt transaction or bucket: what holds buckets.
type boltParent interface {
	Bucket(name []byte) *bolt.Bucket
	CreateBucket(name []byte) (*bolt.Bucket, error)
	DeleteBucket(name []byte) error
}

// boltBucket finds the bucket path in btx, nil when there is none (or
// path is malformed).
func boltBucket(btx *bolt.Tx, path string) *bolt.Bucket {
	if path == "" {
		return nil
	}
	var b *bolt.Bucket
	for rest := path; len(rest) > 0; {
		name, next, ok := cutName(rest)
		if !ok {
			return nil
		}
		if b == nil {
			b = btx.Bucket([]byte(name))
		} else {
			b = b.Bucket([]byte(name))
		}
		if b == nil {
			return nil
		}
		rest = next
	}
	return b
}

func boltParentOf(btx *bolt.Tx, path string) (boltParent, []byte, error) {
	names, err := pathNames(path)
	if err != nil {
		return nil, nil, err
	}
	name := names[len(names)-1]
	if len(names) == 1 {
		return btx, name, nil
	}
	pb := boltBucket(btx, parentPath(path))
	if pb == nil {
		return nil, nil, fmt.Errorf("bucket %s: its parent is missing", printPath(path))
	}
	return pb, name, nil
}

// applyTo writes l into btx: the deletions of records first (a key
// deleted, then made a bucket), then the bucket states in path order (a
// parent before its children), then the records put (a bucket deleted,
// then its name put as a key). Each is the final state, so applying l
// twice leaves what applying it once does.
func (l *Layer) ApplyTo(btx *bolt.Tx) error { return l.ApplyToFill(btx, nil) }

// ApplyToFill is ApplyTo with the fill factor of each bucket it writes
// to: fill(names) (the bucket's path from the top; 0 keeps bbolt's
// default, half a page) is set as the bucket's FillPercent, how full
// bbolt packs a page before it splits it. A bucket whose keys are mostly
// appended (ids in creation order) wastes half of each page at bbolt's
// default.
func (l *Layer) ApplyToFill(btx *bolt.Tx, fill func(names [][]byte) float64) error {
	if err := l.applyRecs(btx, true, fill); err != nil {
		return err
	}
	var err error
	l.bkts.Ascend(func(s *bstate) bool {
		err = applyState(btx, s)
		return err == nil
	})
	if err != nil {
		return err
	}
	return l.applyRecs(btx, false, fill)
}

// applyRecs writes the deletions (dels) or the puts of l into btx.
func (l *Layer) applyRecs(btx *bolt.Tx, dels bool, fill func(names [][]byte) float64) error {
	var err error
	var path string
	var b *bolt.Bucket
	l.recs.Ascend(func(r *rec) bool {
		if (r.val == nil) != dels {
			return true
		}
		if b == nil || r.path != path {
			path, b = r.path, boltBucket(btx, r.path)
			if b == nil {
				err = fmt.Errorf("bucket %s of a record is missing", printPath(r.path))
				return false
			}
			if fill != nil {
				if names, perr := pathNames(r.path); perr == nil {
					if f := fill(names); f > 0 {
						b.FillPercent = f
					}
				}
			}
		}
		if dels {
			// A deleted key that is a bucket of the file now: the
			// bucket's deletion is among the states.
			if err = b.Delete(r.key); errors.Is(err, bolterrors.ErrIncompatibleValue) {
				err = nil
			}
		} else {
			err = b.Put(r.key, r.val)
		}
		if err != nil {
			err = fmt.Errorf("bucket %s key %q: %w", printPath(r.path), r.key, err)
		}
		return err == nil
	})
	return err
}

func applyState(btx *bolt.Tx, s *bstate) error {
	parent, name, err := boltParentOf(btx, s.path)
	if err != nil {
		return err
	}
	if s.hide {
		if err := parent.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
			return fmt.Errorf("delete bucket %s: %w", printPath(s.path), err)
		}
	}
	if !s.live {
		return nil
	}
	var b *bolt.Bucket
	if s.hide {
		if b, err = parent.CreateBucket(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", printPath(s.path), err)
		}
	} else if b = parent.Bucket(name); b == nil {
		return fmt.Errorf("bucket %s is missing", printPath(s.path))
	}
	if s.seqSet {
		return b.SetSequence(s.seq)
	}
	return nil
}
