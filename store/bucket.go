package store

import (
	"bytes"
	"slices"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// bucket is a bucket of the store as the domain code sees it: the only
// way its records are read and written. It mirrors the part of bbolt's
// Bucket the store uses, over a view: the layer of what was written
// since the last checkpoint (layer.go) merged over a bbolt read
// transaction of that checkpoint. Gets and ordered scans see the layer
// first; a deletion there is a tombstone; a bucket created or deleted
// there hides the checkpoint's. A write goes into the view's layer and
// its write-set (writeset.go), never into bbolt: the writer's
// checkpoints alone write bbolt (checkpoint.go).
//
// Cursors and ForEach visit the key/value records of a bucket; a bucket
// that holds nested buckets is walked with ForEachBucket.
type bucket struct {
	v    *view
	path string
	gen  uint64       // v.gen when base and alive were looked up
	base *bolt.Bucket // the checkpoint's bucket, nil when hidden or absent
	gone bool         // deleted since the bucket was opened
}

// view is what a transaction reads and writes.
type view struct {
	l    *layer
	btx  *bolt.Tx
	ws   []byte // the write-set of a write transaction (writeset.go)
	rw   bool   // a write transaction
	gen  uint64 // counts bucket creations and deletions
	open map[string]*bucket
}

// writable tells a write transaction from a read one.
func (tx *Tx) writable() bool { return tx.v.rw }

// root returns the top-level bucket name, nil when there is none.
func (tx *Tx) root(name []byte) *bucket { return tx.v.bucket(childPath("", name)) }

// createRoot returns the top-level bucket name, creating it.
func (tx *Tx) createRoot(name []byte) (*bucket, error) { return tx.v.createBucket(nil, name) }

// deleteRoot deletes the top-level bucket name and all it holds.
func (tx *Tx) deleteRoot(name []byte) error { return tx.v.deleteBucket(nil, name) }

// bucket opens the bucket path, nil when it does not exist.
func (v *view) bucket(path string) *bucket {
	if b := v.open[path]; b != nil && b.gen == v.gen {
		return b
	}
	b := &bucket{v: v, path: path, gen: v.gen}
	if !b.lookup() {
		return nil
	}
	if v.open == nil {
		v.open = map[string]*bucket{}
	}
	v.open[path] = b
	return b
}

// lookup finds whether b exists and its checkpoint's bucket.
func (b *bucket) lookup() bool {
	b.gen, b.base = b.v.gen, nil
	if s := b.v.l.state(b.path); s != nil {
		if !s.live {
			return false
		}
		if !s.hide {
			b.base = boltBucket(b.v.btx, b.path)
		}
		return true
	}
	// An ancestor created or deleted since the checkpoint hides it.
	for p := parentPath(b.path); p != ""; p = parentPath(p) {
		if b.v.l.hidden(p) {
			return false
		}
	}
	b.base = boltBucket(b.v.btx, b.path)
	return b.base != nil
}

// fresh looks b up again after buckets were created or deleted; it
// reports whether b still exists.
func (b *bucket) fresh() bool {
	if b.gen != b.v.gen {
		b.gone = !b.lookup()
	}
	return !b.gone
}

func (v *view) createBucket(parent *bucket, name []byte) (*bucket, error) {
	pp := ""
	if parent != nil {
		if !parent.fresh() {
			return nil, bolterrors.ErrBucketNotFound
		}
		pp = parent.path
	}
	path := childPath(pp, name)
	if b := v.bucket(path); b != nil {
		return b, nil
	}
	switch {
	case !v.rw:
		return nil, bolterrors.ErrTxNotWritable
	case len(name) == 0:
		return nil, bolterrors.ErrBucketNameRequired
	case len(name) > maxKeyLen:
		return nil, bolterrors.ErrKeyTooLarge
	case parent != nil && parent.Get(name) != nil:
		return nil, bolterrors.ErrIncompatibleValue
	}
	v.l.createBucket(path)
	v.ws = appendOp(v.ws, op{kind: opCreateBucket, path: path})
	v.gen++
	return v.bucket(path), nil
}

func (v *view) deleteBucket(parent *bucket, name []byte) error {
	pp := ""
	if parent != nil {
		if !parent.fresh() {
			return bolterrors.ErrBucketNotFound
		}
		pp = parent.path
	}
	if !v.rw {
		return bolterrors.ErrTxNotWritable
	}
	path := childPath(pp, name)
	if v.bucket(path) == nil {
		return bolterrors.ErrBucketNotFound
	}
	v.l.deleteBucket(path)
	v.ws = appendOp(v.ws, op{kind: opDeleteBucket, path: path})
	v.gen++
	return nil
}

// Get returns the value of key, nil when absent; it is valid for the
// transaction's life and must not be changed.
func (b *bucket) Get(key []byte) []byte {
	if !b.fresh() {
		return nil
	}
	if r := b.v.l.get(b.path, key); r != nil {
		return r.val
	}
	if b.base != nil {
		return b.base.Get(key)
	}
	return nil
}

// hasBucket tells whether name is a nested bucket of b.
func (b *bucket) hasBucket(name []byte) bool {
	if s := b.v.l.state(childPath(b.path, name)); s != nil {
		return s.live
	}
	return b.base != nil && b.base.Bucket(name) != nil
}

func (b *bucket) writeCheck(key []byte) error {
	switch {
	case !b.v.rw:
		return bolterrors.ErrTxNotWritable
	case !b.fresh():
		return bolterrors.ErrBucketNotFound
	case len(key) == 0:
		return bolterrors.ErrKeyRequired
	case len(key) > maxKeyLen:
		return bolterrors.ErrKeyTooLarge
	case b.hasBucket(key):
		return bolterrors.ErrIncompatibleValue
	}
	return nil
}

// Put sets the value of key (both are copied).
func (b *bucket) Put(key, value []byte) error {
	if err := b.writeCheck(key); err != nil {
		return err
	}
	if int64(len(value)) > maxValueLen {
		return bolterrors.ErrValueTooLarge
	}
	k, v := clone(key), clone(value)
	b.v.l.put(b.path, k, v)
	b.v.ws = appendOp(b.v.ws, op{kind: opPut, path: b.path, key: k, val: v})
	return nil
}

// Delete removes key; an absent key is no error.
func (b *bucket) Delete(key []byte) error {
	if err := b.writeCheck(key); err != nil {
		return err
	}
	k := clone(key)
	b.v.l.del(b.path, k)
	b.v.ws = appendOp(b.v.ws, op{kind: opDelete, path: b.path, key: k})
	return nil
}

// Bucket returns the nested bucket name, nil when there is none.
func (b *bucket) Bucket(name []byte) *bucket {
	if !b.fresh() {
		return nil
	}
	return b.v.bucket(childPath(b.path, name))
}

// CreateBucketIfNotExists returns the nested bucket name, creating it.
func (b *bucket) CreateBucketIfNotExists(name []byte) (*bucket, error) {
	return b.v.createBucket(b, name)
}

// DeleteBucket deletes the nested bucket name and all it holds.
func (b *bucket) DeleteBucket(name []byte) error { return b.v.deleteBucket(b, name) }

// ForEachBucket calls fn with the name of every nested bucket in order.
func (b *bucket) ForEachBucket(fn func(name []byte) error) error {
	if !b.fresh() {
		return nil
	}
	var names [][]byte
	b.v.l.bkts.AscendGreaterOrEqual(&bstate{path: b.path}, func(s *bstate) bool {
		if len(s.path) <= len(b.path) {
			return true // b itself
		}
		if s.path[:len(b.path)] != b.path {
			return false
		}
		if s.live && parentPath(s.path) == b.path {
			ns, _ := pathNames(s.path)
			names = append(names, ns[len(ns)-1])
		}
		return true
	})
	if b.base != nil {
		err := b.base.ForEachBucket(func(k []byte) error {
			if b.v.l.state(childPath(b.path, k)) == nil {
				names = append(names, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	slices.SortFunc(names, bytes.Compare)
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// Sequence is the bucket's sequence.
func (b *bucket) Sequence() uint64 {
	if !b.fresh() {
		return 0
	}
	if s := b.v.l.state(b.path); s != nil && s.seqSet {
		return s.seq
	}
	if b.base != nil {
		return b.base.Sequence()
	}
	return 0
}

// NextSequence increments the bucket's sequence and returns it.
func (b *bucket) NextSequence() (uint64, error) {
	if !b.v.rw {
		return 0, bolterrors.ErrTxNotWritable
	}
	if !b.fresh() {
		return 0, bolterrors.ErrBucketNotFound
	}
	seq := b.Sequence() + 1
	b.v.l.setSeq(b.path, seq)
	b.v.ws = appendOp(b.v.ws, op{kind: opSetSeq, path: b.path, seq: seq})
	return seq, nil
}

// KeyN counts the bucket's own records.
func (b *bucket) KeyN() int {
	if !b.fresh() {
		return 0
	}
	n := 0
	if b.base != nil {
		st := b.base.Stats()
		if st.BucketN > 1 {
			// bbolt counts the nested buckets' keys too: count the
			// bucket's own.
			c := b.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				n++
			}
			return n
		}
		n = st.KeyN
	}
	b.v.l.recs.AscendGreaterOrEqual(&rec{path: b.path}, func(r *rec) bool {
		if r.path != b.path {
			return false
		}
		in := b.base != nil && b.base.Get(r.key) != nil
		switch {
		case r.val == nil && in:
			n--
		case r.val != nil && !in:
			n++
		}
		return true
	})
	return n
}

// ForEach calls fn for every record in key order, stopping at its first
// error. fn must not write to b.
func (b *bucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// OnCommit calls fn after the transaction commits (never if it fails).
func (tx *Tx) OnCommit(fn func()) {
	if tx.v.rw {
		tx.onCommit = append(tx.onCommit, fn)
	}
}
