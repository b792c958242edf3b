package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
)

// Coalescer drops from a write-set the ops that a later op of the same
// write-set makes moot, so that a group whose writes put one key again
// and again (the tier-1 routine counters, a batch-id group, a bucket's
// sequence) logs it once, with its last value:
//
//   - a put or delete of a key, when the key is put or deleted again
//     later in the same bucket path;
//   - a sequence set, when the same bucket's sequence is set again later.
//
// Bucket creations and deletions stay, in order, and so does the order of
// what is kept, so replaying the result gives the layer replaying the
// whole write-set gives: an op it drops changed only its own key (or
// sequence), which the later op sets again over the same bucket states.
// The zero value is ready; it keeps its buffers between calls.
type Coalescer struct {
	ops  []opSpan
	last map[uint64]int
	seed maphash.Seed
	key  []byte
	out  []byte
}

// opSpan is one op of the write-set being coalesced: where it is, and
// what it sets (target: kind class, path, key).
type opSpan struct {
	start, end int
	cls        byte // 0: a bucket op, never dropped
	path, key  []byte
}

// scan finds the ops of ws (their framing only: Replay checks the rest).
func (c *Coalescer) scan(ws []byte) error {
	c.ops = c.ops[:0]
	if len(ws) == 0 || ws[0] != WriteSetVersion {
		return fmt.Errorf("%w: version", errBadWriteSet)
	}
	at := 1
	field := func() ([]byte, bool) {
		n, w := binary.Uvarint(ws[at:])
		if w <= 0 || n > uint64(len(ws)-at-w) {
			return nil, false
		}
		v := ws[at+w : at+w+int(n)]
		at += w + int(n)
		return v, true
	}
	for at < len(ws) {
		s := opSpan{start: at}
		kind := ws[at]
		at++
		var ok bool
		if s.path, ok = field(); !ok {
			return fmt.Errorf("%w: bucket path at offset %d", errBadWriteSet, s.start)
		}
		switch kind {
		case opPut:
			s.cls = 1
			if s.key, ok = field(); ok {
				_, ok = field()
			}
		case opDelete:
			s.cls = 1
			s.key, ok = field()
		case opCreateBucket, opDeleteBucket:
		case opSetSeq:
			s.cls = 2
			_, w := binary.Uvarint(ws[at:])
			if ok = w > 0; ok {
				at += w
			}
		default:
			return fmt.Errorf("%w: op kind %d at offset %d", errBadWriteSet, kind, s.start)
		}
		if !ok {
			return fmt.Errorf("%w: op at offset %d", errBadWriteSet, s.start)
		}
		s.end = at
		c.ops = append(c.ops, s)
	}
	return nil
}

// smallWriteSet is how many ops are compared pairwise instead of through
// the map.
const smallWriteSet = 16

// Coalesce returns ws without its moot ops: ws itself when it has none,
// else a buffer of c that is valid until the next call. A write-set that
// does not decode is returned as it is, with the error.
func (c *Coalescer) Coalesce(ws []byte) ([]byte, error) {
	if err := c.scan(ws); err != nil {
		return ws, err
	}
	n := len(c.ops)
	if n < 2 {
		return ws, nil
	}
	// keep[i] is false for an op a later one makes moot.
	dropped := 0
	if n <= smallWriteSet {
		for i := range n {
			a := &c.ops[i]
			if a.cls == 0 {
				continue
			}
			for j := i + 1; j < n; j++ {
				if b := &c.ops[j]; b.cls == a.cls && bytes.Equal(a.path, b.path) && bytes.Equal(a.key, b.key) {
					a.cls = 0xff // moot
					dropped++
					break
				}
			}
		}
	} else {
		// By a hash of the target, the latest op of each; two targets of
		// one hash only cost a moot op kept (keeping one is always safe).
		if c.last == nil {
			c.last = make(map[uint64]int, n)
			c.seed = maphash.MakeSeed()
		}
		clear(c.last)
		for i := n - 1; i >= 0; i-- {
			a := &c.ops[i]
			if a.cls == 0 {
				continue
			}
			c.key = append(append(append(append(c.key[:0], a.cls), a.path...), 0), a.key...)
			h := maphash.Bytes(c.seed, c.key)
			if j, ok := c.last[h]; ok {
				if b := &c.ops[j]; b.cls == a.cls && bytes.Equal(a.path, b.path) && bytes.Equal(a.key, b.key) {
					a.cls = 0xff
					dropped++
					continue
				}
			}
			c.last[h] = i
		}
	}
	if dropped == 0 {
		return ws, nil
	}
	out := append(c.out[:0], ws[0])
	for i := range c.ops {
		if s := &c.ops[i]; s.cls != 0xff {
			out = append(out, ws[s.start:s.end]...)
		}
	}
	if cap(out) <= 1<<20 {
		c.out = out
	}
	return out, nil
}
