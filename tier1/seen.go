package tier1

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/synapse-edge/synapse/store"
)

// The batch-id table (schema 9, t1_seen_o) groups the ids of a sender that
// differ only at their end, as the ids of a counting sender do: one record
// per group,
//
//	key:   scope 0x00 head kind
//	value: seen_at(unix ns, uint64 BE; the newest mark of the group)
//	       + the set of the ends seen
//
// in two kinds. An id that ends in two digits is in a group of a hundred
// ('d': "gw-7-12300" ... "gw-7-12399", head "gw-7-123"), its set 100 bits
// (13 bytes) of the number they make; any other id is in a group of the
// ids that differ in their last byte only ('b', head the id without it),
// its set 256 bits (32 bytes). So a write of many small batches reads and
// puts one record per hundred of them instead of one each, and a
// counter's ids take under a byte each. head is written so that a
// counter's groups sort in the order it counts: the digits that end it
// (at most maxRunDigits) follow a byte that holds their number, "gw-7-"
// 0x03 "123" for "gw-7-123" (see orderedHead). A counting sender's new
// groups are then appended at the end of its run of keys, and a write
// changes the last page or two of the table instead of pages all over it
// (plain "gw-7-1234" sorts between "gw-7-123" and "gw-7-124", so that a
// counter's groups went into every page of its range, each page half full
// and each in memory once written).
//
// Older files have groups of the 'b' kind keyed by the plain head and no
// kind (t1_seen_g, schema 3 to 8) or one record per id (t1_seen, schema 2:
// scope 0x00 batch_id → seen_at): both are still looked up, never written,
// and pruned until they are empty and dropped.
const seenValueLen = 8 + 32

// The kinds of group, the last byte of their keys, and the length of a
// digit group's value.
const (
	byteGroup     = 'b'
	digitGroup    = 'd'
	digitValueLen = 8 + 13
)

// groupValueLen is the length of the value of a group of kind k.
func groupValueLen(k byte) int {
	if k == digitGroup {
		return digitValueLen
	}
	return seenValueLen
}

// maxRunDigits bounds the digits of a head that its length byte counts
// (a byte below '0', so that the run reads back unambiguously).
const maxRunDigits = 32

// groupKey appends the key of the group of batchID (not empty) in
// t1_seen_o and returns it with the id's place in the group's set.
func groupKey(dst []byte, scope, batchID string) ([]byte, byte) {
	n := len(batchID)
	last := batchID[n-1]
	head, kind, slot := batchID[:n-1], byte(byteGroup), last
	if n >= 2 && isDigit(last) && isDigit(batchID[n-2]) {
		head, kind, slot = batchID[:n-2], digitGroup, (batchID[n-2]-'0')*10+last-'0'
	}
	return append(orderedHead(append(append(dst, scope...), 0), head), kind), slot
}

// orderedHead appends head (a batch id without its last byte or two) as
// the key of t1_seen_o puts it: the head up to its last digits, their number as a
// byte, the digits. For a head with no digits at its end the byte is 0.
// The key names one head only: its final digits, which the length byte
// (never a digit) stops, are the run, and the byte before them checks it.
func orderedHead(dst []byte, head string) []byte {
	i := len(head)
	for i > 0 && len(head)-i < maxRunDigits && isDigit(head[i-1]) {
		i--
	}
	return append(append(append(dst, head[:i]...), byte(len(head)-i)), head[i:]...)
}

// dedup is the batch-id table inside a write transaction, opened once for
// the many batches of one write: seen marks in memory, flush puts the
// groups it changed.
type dedup struct {
	b      store.RawBucket
	legacy store.RawBucket // t1_seen_g of schema 3 to 8, the zero bucket when absent or empty
	v2     store.RawBucket // t1_seen of schema 2, the zero bucket when absent or empty
	// groups are the records read or changed by this write, in the order
	// first met; index finds them by key once there are a few.
	groups []*seenGroup
	index  map[string]*seenGroup
	key    []byte // scratch
	arena  []byte // the groups' keys
	// The first group, its key and the groups' first slots live here (one
	// allocation for a write of one batch).
	first              seenGroup
	firstUsed          bool
	slots              [4]*seenGroup
	keyScratch, keyArr [64]byte
}

// seenGroup is one record of the table, as this write leaves it.
type seenGroup struct {
	key   []byte
	v     [seenValueLen]byte
	dirty bool
}

// openDedup opens (creating) the batch-id table for writing.
func openDedup(tx *store.Tx) (*dedup, error) {
	b, err := seenRecords.CreateRaw(tx)
	if err != nil {
		return nil, err
	}
	d := &dedup{b: b}
	d.groups, d.key, d.arena = d.slots[:0], d.keyScratch[:0], d.keyArr[:0]
	if old := seenV3Records.Raw(tx); !isEmpty(old) {
		d.legacy = old
	}
	if old := seenV2Records.Raw(tx); !isEmpty(old) {
		d.v2 = old
	}
	return d, nil
}

// isEmpty tells whether b holds no record.
func isEmpty(b store.RawBucket) bool {
	empty := true
	_ = b.Scan(nil, func(_, _ []byte) error { empty = false; return store.ErrStop })
	return empty
}

// group returns the record of d.key, read from the table when first met.
func (d *dedup) group() *seenGroup {
	if n := len(d.groups); n > 0 && bytes.Equal(d.groups[n-1].key, d.key) {
		return d.groups[n-1] // the usual case: the same group as the last batch
	}
	if d.index != nil {
		if g := d.index[string(d.key)]; g != nil {
			return g
		}
	} else {
		for _, g := range d.groups {
			if bytes.Equal(g.key, d.key) {
				return g
			}
		}
	}
	if cap(d.arena)-len(d.arena) < len(d.key) {
		d.arena = make([]byte, 0, max(len(d.key), 2*cap(d.arena), 128))
	}
	d.arena = append(d.arena, d.key...)
	key := d.arena[len(d.arena)-len(d.key) : len(d.arena) : len(d.arena)]
	var g *seenGroup
	if !d.firstUsed {
		d.firstUsed = true
		g = &d.first
		g.key = key
	} else {
		g = &seenGroup{key: key}
	}
	if v := d.b.Get(d.key); len(v) == groupValueLen(d.key[len(d.key)-1]) {
		copy(g.v[:], v)
	}
	d.groups = append(d.groups, g)
	switch {
	case d.index != nil:
		d.index[string(g.key)] = g
	case len(d.groups) > 8:
		d.index = make(map[string]*seenGroup, 2*len(d.groups))
		for _, g := range d.groups {
			d.index[string(g.key)] = g
		}
	}
	return g
}

// seen reports whether (scope, batchID) was stored before (or earlier in
// this write), and marks it (with time at) when it was not. batchID must
// not be empty. The mark is stored by flush.
func (d *dedup) seen(scope, batchID string, at int64) (bool, error) {
	if batchID == "" {
		return false, errors.New("t1 dedup: empty batch id")
	}
	var slot byte
	d.key, slot = groupKey(d.key[:0], scope, batchID)
	last := batchID[len(batchID)-1]
	g := d.group()
	bit := &g.v[8+slot>>3]
	if *bit&(1<<(slot&7)) != 0 {
		return true, nil
	}
	if d.legacy.Exists() || d.v2.Exists() {
		// The older tables' keys: scope 0x00 head (t1_seen_g), and the
		// whole id (t1_seen).
		d.key = append(append(append(d.key[:0], scope...), 0), batchID[:len(batchID)-1]...)
		if v := d.legacy.Get(d.key); len(v) == seenValueLen && v[8+last>>3]&(1<<(last&7)) != 0 {
			return true, nil
		}
		if d.v2.Exists() && d.v2.Get(append(d.key, last)) != nil {
			return true, nil
		}
	}
	*bit |= 1 << (slot & 7)
	if uint64(at) > binary.BigEndian.Uint64(g.v[:8]) {
		binary.BigEndian.PutUint64(g.v[:8], uint64(at))
	}
	g.dirty = true
	return false, nil
}

// flush puts the records that seen changed, in key order.
func (d *dedup) flush() error {
	dirty := slices.DeleteFunc(d.groups, func(g *seenGroup) bool { return !g.dirty })
	slices.SortFunc(dirty, func(a, b *seenGroup) int { return bytes.Compare(a.key, b.key) })
	for _, g := range dirty {
		if err := d.b.Put(g.key, g.v[:groupValueLen(g.key[len(g.key)-1])]); err != nil {
			return err
		}
	}
	d.groups, d.index, d.arena = nil, nil, nil // a later seen reads the records again
	d.firstUsed = true                         // and puts new groups
	return nil
}

// pruneSeen deletes batch-id records older than before (unix ns), at
// most max of them: the groups whose newest mark is older, and the
// records of the older files' tables (each dropped once empty).
func pruneSeen(tx *store.Tx, before int64, max int) (int, error) {
	n := 0
	for _, r := range []store.Records[[]byte]{seenRecords, seenV3Records, seenV2Records} {
		b := r.Raw(tx)
		if !b.Exists() {
			continue
		}
		err := b.Scan(nil, func(k, v []byte) error {
			if n >= max {
				return store.ErrStop
			}
			if len(v) >= 8 && int64(binary.BigEndian.Uint64(v)) < before {
				if err := b.Delete(k); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		if r != seenRecords && isEmpty(b) {
			if err := r.Drop(tx); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// CheckRecords is tier-1's part of synapse db check (a store.CheckFunc):
// it verifies the batch-id tables (t1_seen_o, and t1_seen_g of an older
// file): every key is a scope, a 0x00 and the part of a batch id before
// its end (in t1_seen_o written by orderedHead, then the group's kind),
// and every value a mark time and a set of its kind's size with at least
// one id in it. A record that fails is
// read as "nothing seen" by the dedup, so a batch sent again would be
// stored twice: the check names it.
func CheckRecords(tx *store.Tx, add func(format string, args ...any)) {
	for _, r := range []store.Records[[]byte]{seenRecords, seenV3Records} {
		_ = r.Raw(tx).Scan(nil, func(k, v []byte) error {
			sep := bytes.IndexByte(k, 0)
			switch {
			case sep < 0:
				add("tier-1 batch-id group %q: the key has no scope separator", k)
			case r == seenRecords && k[len(k)-1] != byteGroup && k[len(k)-1] != digitGroup:
				add("tier-1 batch-id group %q: the key ends in no kind of group", k)
			case r == seenRecords && !isOrderedHead(k[sep+1:len(k)-1]):
				add("tier-1 batch-id group %q: the key's digit count does not match its digits", k)
			case r == seenRecords && len(v) != groupValueLen(k[len(k)-1]) || r != seenRecords && len(v) != seenValueLen:
				add("tier-1 batch-id group %q: %d bytes, want %d", k, len(v), groupValueLen(k[len(k)-1]))
			case bytes.Count(v[8:], []byte{0}) == len(v)-8:
				add("tier-1 batch-id group %q: no id in the set", k)
			case r == seenRecords && k[len(k)-1] == digitGroup && v[len(v)-1]&0xf0 != 0:
				add("tier-1 batch-id group %q: the set holds numbers past 99", k)
			}
			return nil
		})
	}
}

// isDigit tells whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isOrderedHead tells whether k is a head as orderedHead writes it: the
// digits it ends in preceded by their number.
func isOrderedHead(k []byte) bool {
	j := len(k)
	for j > 0 && k[j-1] >= '0' && k[j-1] <= '9' {
		j--
	}
	return j > 0 && int(k[j-1]) == len(k)-j && len(k)-j <= maxRunDigits
}

var _ store.CheckFunc = CheckRecords
