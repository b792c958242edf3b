// Package kv is the store's layered view of its data: a Layer of what
// was written since the last checkpoint (two copy-on-write B-trees)
// merged over a bbolt read transaction of that checkpoint, with Bucket
// and Cursor mirroring the part of bbolt's API the store uses, and the
// write-set of what a transaction changed (writeset.go), which the store
// appends to its commit log. Package store owns the writer, the log and
// the checkpoints that apply a Layer to bbolt (Layer.ApplyTo).
package kv

import (
	"bytes"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket is a bucket of a View: gets and ordered scans see the layer
// first; a deletion there is a tombstone; a bucket created or deleted
// there hides the checkpoint's. A write goes into the view's layer and
// its write-set, never into bbolt.
//
// Cursors and ForEach visit the key/value records of a bucket; a bucket
// that holds nested buckets is walked with ForEachBucket.
type Bucket struct {
	v    *View
	path string
	gen  uint64       // v.gen when base and alive were looked up
	base *bolt.Bucket // the checkpoint's bucket, nil when hidden or absent
	gone bool         // deleted since the bucket was opened
	// cur is a cursor over base that a write transaction's lookups reuse
	// (a bbolt Get or Bucket makes one each, with its stack); a read
	// transaction, which goroutines may share, makes its own each time.
	cur *bolt.Cursor
}

// baseGet looks key up in the checkpoint's bucket: its value (nil when
// absent or a nested bucket) and whether it is a nested bucket there.
func (b *Bucket) baseGet(key []byte) (val []byte, bucket bool) {
	switch {
	case b.base == nil:
		return nil, false
	case !b.v.rw:
		if v := b.base.Get(key); v != nil {
			return v, false
		}
		return nil, b.base.Bucket(key) != nil
	}
	if b.cur == nil || b.cur.Bucket() != b.base {
		b.cur = b.base.Cursor()
	}
	k, v := b.cur.Seek(key) // v is nil for a nested bucket
	if !bytes.Equal(k, key) {
		return nil, false
	}
	return v, v == nil
}

// View is what a transaction reads and writes: l over btx.
type View struct {
	l   *Layer
	btx *bolt.Tx
	ws  []byte // the ops of a write transaction's write-set
	rw  bool   // a write transaction
	gen uint64 // counts bucket creations and deletions

	// The buckets the view has opened, by path: the first ones in few
	// (most transactions open one to a few), the others in more.
	few  [4]Bucket
	nfew int
	more map[string]*Bucket

	// The search keys of the view's lookups in its layer, kept here so
	// that a lookup allocates none: a View, like bbolt's Tx, is used by
	// one goroutine at a time (its open buckets rely on that too).
	sprobe bstate
	rprobe rec
}

// NewView is a view of l over btx; with rw, writes go into l (which
// nobody else may use meanwhile: give it a Clone) and its ops.
func NewView(l *Layer, btx *bolt.Tx, rw bool) *View { return &View{l: l, btx: btx, rw: rw} }

// Layer is the view's layer, with the writes made through the view.
func (v *View) Layer() *Layer { return v.l }

// Ops are the ops of the writes made through the view, encoded as in a
// write-set after its version byte (writeset.go).
func (v *View) Ops() []byte { return v.ws }

// ReuseOps gives a write view buf's storage to append its ops to (what
// buf holds is dropped): the store's writer hands each transaction the
// buffer the one before it used, once it has copied that one's ops.
func (v *View) ReuseOps(buf []byte) { v.ws = buf[:0] }

// Writable tells a write view from a read one.
func (v *View) Writable() bool { return v.rw }

// Root returns the top-level bucket name, nil when there is none.
func (v *View) Root(name []byte) *Bucket { return v.child("", name) }

// CreateRoot returns the top-level bucket name, creating it.
func (v *View) CreateRoot(name []byte) (*Bucket, error) { return v.createBucket(nil, name) }

// DeleteRoot deletes the top-level bucket name and all it holds.
func (v *View) DeleteRoot(name []byte) error { return v.deleteBucket(nil, name) }

// child opens the bucket name inside the bucket parent: its path is
// built on the stack, and made a string only for a bucket the view has
// not opened yet (every record a transaction reads or writes opens its
// buckets by name).
func (v *View) child(parent string, name []byte) *Bucket {
	var buf [64]byte
	return v.bucket(appendChildPath(buf[:0], parent, name))
}

// state is the layer's state of the bucket path, nil when it has none.
func (v *View) state(path string) *bstate {
	v.sprobe = bstate{path: path}
	s, _ := v.l.bkts.Get(&v.sprobe)
	v.sprobe = bstate{}
	return s
}

// nested tells whether the layer holds the state of a bucket inside the
// bucket path (a path is a prefix of exactly its descendants' paths).
func (v *View) nested(path string) bool {
	found := false
	v.sprobe = bstate{path: path}
	v.l.bkts.AscendGreaterOrEqual(&v.sprobe, func(s *bstate) bool {
		if s.path == path {
			return true // the bucket itself
		}
		found = strings.HasPrefix(s.path, path)
		return false
	})
	v.sprobe = bstate{}
	return found
}

// get is the layer's record of key in the bucket path, nil when it has
// none.
func (v *View) get(path string, key []byte) *rec {
	v.rprobe = rec{path: path, key: key}
	r, _ := v.l.recs.Get(&v.rprobe)
	v.rprobe = rec{}
	return r
}

// bucket opens the bucket path, nil when it does not exist. A bucket
// the view has opened before is the same one, looked up again if
// buckets were created or deleted since.
func (v *View) bucket(path []byte) *Bucket {
	if b := v.opened(path); b != nil {
		if !b.fresh() {
			return nil
		}
		return b
	}
	nb := Bucket{v: v, path: string(path)}
	if !nb.lookup() {
		return nil
	}
	if v.nfew < len(v.few) {
		v.few[v.nfew] = nb
		v.nfew++
		return &v.few[v.nfew-1]
	}
	if v.more == nil {
		v.more = map[string]*Bucket{}
	}
	b := new(Bucket)
	*b = nb
	v.more[b.path] = b
	return b
}

// opened is the bucket path the view has opened, nil when it has not.
func (v *View) opened(path []byte) *Bucket {
	for i := range v.nfew {
		if v.few[i].path == string(path) {
			return &v.few[i]
		}
	}
	return v.more[string(path)]
}

// lookup finds whether b exists and its checkpoint's bucket.
func (b *Bucket) lookup() bool {
	b.gen, b.base = b.v.gen, nil
	if s := b.v.state(b.path); s != nil {
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
		if s := b.v.state(p); s != nil && s.hide {
			return false
		}
	}
	b.base = boltBucket(b.v.btx, b.path)
	return b.base != nil
}

// fresh looks b up again after buckets were created or deleted; it
// reports whether b still exists.
func (b *Bucket) fresh() bool {
	if b.gen != b.v.gen {
		b.gone = !b.lookup()
	}
	return !b.gone
}

func (v *View) createBucket(parent *Bucket, name []byte) (*Bucket, error) {
	pp := ""
	if parent != nil {
		if !parent.fresh() {
			return nil, bolterrors.ErrBucketNotFound
		}
		pp = parent.path
	}
	var buf [64]byte
	p := appendChildPath(buf[:0], pp, name)
	if b := v.bucket(p); b != nil {
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
	path := string(p)
	v.l.createBucket(path)
	v.ws = appendOp(v.ws, op{kind: opCreateBucket, path: path})
	v.gen++
	return v.bucket(p), nil
}

func (v *View) deleteBucket(parent *Bucket, name []byte) error {
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
	var buf [64]byte
	p := appendChildPath(buf[:0], pp, name)
	if v.bucket(p) == nil {
		return bolterrors.ErrBucketNotFound
	}
	path := string(p)
	v.l.deleteBucket(path)
	v.ws = appendOp(v.ws, op{kind: opDeleteBucket, path: path})
	v.gen++
	return nil
}

// Get returns the value of key, nil when absent; it is valid for the
// transaction's life and must not be changed.
func (b *Bucket) Get(key []byte) []byte {
	if !b.fresh() {
		return nil
	}
	if r := b.v.get(b.path, key); r != nil {
		return r.val
	}
	v, _ := b.baseGet(key)
	return v
}

// hasBucket tells whether name is a nested bucket of b. The layer is
// asked about name's path only when it holds a bucket inside b at all,
// so that a write to a bucket without nested ones makes no path.
func (b *Bucket) hasBucket(name []byte) bool {
	if b.v.nested(b.path) {
		if s := b.v.state(childPath(b.path, name)); s != nil {
			return s.live
		}
	}
	_, bucket := b.baseGet(name)
	return bucket
}

func (b *Bucket) writeCheck(key []byte) error {
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
func (b *Bucket) Put(key, value []byte) error {
	if err := b.writeCheck(key); err != nil {
		return err
	}
	if int64(len(value)) > maxValueLen {
		return bolterrors.ErrValueTooLarge
	}
	// One copy holds both: the layer keeps them as long as each other.
	kv := append(append(make([]byte, 0, len(key)+len(value)), key...), value...)
	k, v := kv[:len(key):len(key)], kv[len(key):]
	b.v.l.put(b.path, k, v)
	b.v.ws = appendOp(b.v.ws, op{kind: opPut, path: b.path, key: k, val: v})
	return nil
}

// Delete removes key; an absent key is no error.
func (b *Bucket) Delete(key []byte) error {
	if err := b.writeCheck(key); err != nil {
		return err
	}
	k := clone(key)
	if b.base == nil || b.base.Get(k) == nil {
		// Nothing of the checkpoint to hide: the layer forgets the key
		// (a record put and deleted since the checkpoint, an outbox's
		// delivered item, leaves no tombstone for every scan to pass).
		b.v.l.forget(b.path, k)
	} else {
		b.v.l.del(b.path, k)
	}
	b.v.ws = appendOp(b.v.ws, op{kind: opDelete, path: b.path, key: k})
	return nil
}

// Bucket returns the nested bucket name, nil when there is none.
func (b *Bucket) Bucket(name []byte) *Bucket {
	if !b.fresh() {
		return nil
	}
	return b.v.child(b.path, name)
}

// CreateBucketIfNotExists returns the nested bucket name, creating it.
func (b *Bucket) CreateBucketIfNotExists(name []byte) (*Bucket, error) {
	return b.v.createBucket(b, name)
}

// DeleteBucket deletes the nested bucket name and all it holds.
func (b *Bucket) DeleteBucket(name []byte) error { return b.v.deleteBucket(b, name) }

// ForEachBucket calls fn with the name of every nested bucket in order.
func (b *Bucket) ForEachBucket(fn func(name []byte) error) error {
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
func (b *Bucket) Sequence() uint64 {
	if !b.fresh() {
		return 0
	}
	if s := b.v.state(b.path); s != nil && s.seqSet {
		return s.seq
	}
	if b.base != nil {
		return b.base.Sequence()
	}
	return 0
}

// NextSequence increments the bucket's sequence and returns it.
func (b *Bucket) NextSequence() (uint64, error) {
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
func (b *Bucket) KeyN() int {
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
func (b *Bucket) ForEach(fn func(k, v []byte) error) error {
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}
