package kv

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// cursor walks the records of a bucket in key order, both ways: the
// layer's records merged over the checkpoint's (bucket.go), a tombstone
// hiding the checkpoint's record of its key. Each move is a search from
// the key the cursor is at, so writes to the bucket between moves (a
// Delete of the record the cursor is at) are seen as bbolt's cursor
// sees them; the checkpoint's cursor, which no write changes, is kept
// where it is while moves go one way.
type Cursor struct {
	b   *Bucket
	key []byte // where the cursor is; nil: nowhere (past either end)
	end bool   // key is nil past the last record (Prev goes to the last)

	bc *bolt.Cursor // over b.base
	// bk, bv are where bc is: for fwd, the first record at or after bt;
	// for back, the last record before bt (binf: before the end). bt is
	// the cursor's copy: a caller may reuse the key it seeks.
	bk, bv    []byte
	bt        []byte
	fwd, back bool
	binf      bool
	step      []byte // the key a walk past a tombstone searches the checkpoint from
	next      []byte // the key Next seeks: just after key
	probe     rec    // the layer's search key, kept so that a move allocates none
}

// Cursor returns a cursor over the bucket's records.
func (b *Bucket) Cursor() *Cursor { return &Cursor{b: b} }

func (c *Cursor) base() *bolt.Cursor {
	if !c.b.fresh() || c.b.base == nil {
		c.bc = nil
		return nil
	}
	if c.bc == nil || c.bc.Bucket() != c.b.base {
		c.bc, c.fwd, c.back = c.b.base.Cursor(), false, false
	}
	return c.bc
}

// First moves to the first record; k is nil when there is none.
func (c *Cursor) First() (k, v []byte) { return c.seekGE(nil) }

// Last moves to the last record.
func (c *Cursor) Last() (k, v []byte) { return c.seekLT(nil, true) }

// Seek moves to the first record at or after key.
func (c *Cursor) Seek(key []byte) (k, v []byte) { return c.seekGE(key) }

// Next moves to the next record.
func (c *Cursor) Next() (k, v []byte) {
	if c.key == nil {
		return nil, nil
	}
	c.next = append(append(c.next[:0], c.key...), 0)
	return c.seekGE(c.next)
}

// Prev moves to the previous record.
func (c *Cursor) Prev() (k, v []byte) {
	if c.key == nil {
		if c.end {
			return c.Last()
		}
		return nil, nil
	}
	return c.seekLT(c.key, false)
}

// Delete removes the record the cursor is at.
func (c *Cursor) Delete() error {
	if c.key == nil {
		return nil
	}
	return c.b.Delete(c.key)
}

func (c *Cursor) at(k, v []byte) ([]byte, []byte) {
	c.key, c.end = k, false
	return k, v
}

func (c *Cursor) seekGE(target []byte) ([]byte, []byte) {
	if !c.b.fresh() {
		return c.at(nil, nil)
	}
	// One walk of the layer from target: a tombstone hides the
	// checkpoint's record of its key and is passed over in the same walk
	// (a run of them, the deleted head of a queue, costs one search, not
	// one per tombstone).
	bk, bv := c.baseGE(target)
	var lk, lv []byte
	c.probe = rec{path: c.b.path, key: target}
	c.b.v.l.recs.AscendGreaterOrEqual(&c.probe, func(r *rec) bool {
		if r.path != c.b.path {
			return false
		}
		if bk != nil {
			switch n := bytes.Compare(bk, r.key); {
			case n < 0: // the checkpoint's record comes first
				return false
			case n == 0: // the layer's record replaces it
				c.step = append(append(c.step[:0], r.key...), 0)
				bk, bv = c.baseGE(c.step)
			}
		}
		if r.val != nil {
			lk, lv = r.key, r.val
			return false
		}
		return true
	})
	c.probe = rec{}
	switch {
	case lk != nil:
		return c.at(lk, lv)
	case bk != nil:
		return c.at(bk, bv)
	}
	c.at(nil, nil)
	c.end = true
	return nil, nil
}

// seekLT moves to the last record before target (inf: the last).
func (c *Cursor) seekLT(target []byte, inf bool) ([]byte, []byte) {
	if !c.b.fresh() {
		return c.at(nil, nil)
	}
	bk, bv := c.baseLT(target, inf)
	var lk, lv []byte
	c.probe = rec{path: c.b.path, key: target, max: inf}
	c.b.v.l.recs.DescendLessOrEqual(&c.probe, func(r *rec) bool {
		if r.path != c.b.path {
			return false
		}
		if !inf && bytes.Equal(r.key, target) {
			return true
		}
		if bk != nil {
			switch n := bytes.Compare(bk, r.key); {
			case n > 0:
				return false
			case n == 0:
				c.step = append(c.step[:0], r.key...)
				bk, bv = c.baseLT(c.step, false)
			}
		}
		if r.val != nil {
			lk, lv = r.key, r.val
			return false
		}
		return true
	})
	c.probe = rec{}
	switch {
	case lk != nil:
		return c.at(lk, lv)
	case bk != nil:
		return c.at(bk, bv)
	}
	return c.at(nil, nil)
}

// baseGE is the checkpoint's first record at or after target.
func (c *Cursor) baseGE(target []byte) ([]byte, []byte) {
	bc := c.base()
	if bc == nil {
		return nil, nil
	}
	if c.fwd && bytes.Compare(target, c.bt) >= 0 {
		for step := 0; ; step++ {
			if c.bk == nil || bytes.Compare(c.bk, target) >= 0 {
				c.bt = append(c.bt[:0], target...)
				return c.bk, c.bv
			}
			if step == 2 {
				break
			}
			c.bk, c.bv = skipBuckets(bc.Next)
		}
	}
	k, v := bc.Seek(target)
	if k != nil && v == nil {
		k, v = skipBuckets(bc.Next)
	}
	c.bk, c.bv, c.bt, c.fwd, c.back = k, v, append(c.bt[:0], target...), true, false
	return k, v
}

// baseLT is the checkpoint's last record before target (inf: the last).
func (c *Cursor) baseLT(target []byte, inf bool) ([]byte, []byte) {
	bc := c.base()
	if bc == nil {
		return nil, nil
	}
	if c.back && !inf && (c.binf || bytes.Compare(target, c.bt) <= 0) {
		for step := 0; ; step++ {
			if c.bk == nil || bytes.Compare(c.bk, target) < 0 {
				c.bt, c.binf = append(c.bt[:0], target...), false
				return c.bk, c.bv
			}
			if step == 2 {
				break
			}
			c.bk, c.bv = skipBuckets(bc.Prev)
		}
	}
	var k, v []byte
	if inf {
		k, v = bc.Last()
	} else if k, _ = bc.Seek(target); k == nil {
		k, v = bc.Last()
	} else {
		k, v = bc.Prev()
	}
	if k != nil && v == nil {
		k, v = skipBuckets(bc.Prev)
	}
	c.bk, c.bv, c.bt, c.binf, c.back, c.fwd = k, v, append(c.bt[:0], target...), inf, true, false
	return k, v
}

// skipBuckets moves a bbolt cursor with move past nested buckets (a nil value).
func skipBuckets(move func() ([]byte, []byte)) ([]byte, []byte) {
	for {
		k, v := move()
		if k == nil || v != nil {
			return k, v
		}
	}
}
