package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// Tier-1 frames live in nested buckets, one per routine, under "t1":
//
//	t1/<capability_id>   key: ts(int64 BE, sign bit flipped) device_id 0x00 seq(uint64 BE)
//	                     value: a block of frames (tier1/block.go); ts is the
//	                     block's first frame's
//	t1_stats             capability_id → frames(uint64 BE) bytes(uint64 BE)
//	t1_seen_g            scope 0x00 batch_id minus its last byte →
//	                     received_at(unix ns, uint64 BE, the newest) and
//	                     the set of last bytes seen (see T1Dedup)
//	t1_seen              (schema 2, read and pruned only) scope 0x00
//	                     batch_id → received_at(unix ns, uint64 BE)
//	t1_outbox            seq(uint64 BE) → a batch to forward upstream
//
// Keys sort by time, then device, then arrival, so range scans answer time
// queries and retention deletes from the front.
var (
	bucketT1      = []byte("t1")
	bucketT1Stats = []byte("t1_stats")
	bucketT1Seen  = []byte("t1_seen")
	bucketT1SeenG = []byte("t1_seen_g")
	bucketT1Out   = []byte("t1_outbox")
)

// T1Key builds the key of a frame.
func T1Key(dst []byte, ts int64, device string, seq uint64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
	dst = append(dst, device...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// T1KeyTime is the timestamp part of a frame key.
func T1KeyTime(k []byte) int64 {
	if len(k) < 8 {
		return math.MinInt64
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
}

// T1KeyDevice is the device part of a frame key.
func T1KeyDevice(k []byte) []byte {
	if len(k) < 17 {
		return nil
	}
	return k[8 : len(k)-9]
}

func t1Tx(tx *Tx) (*bucket, error) {
	if tx.writable() {
		return tx.createRoot(bucketT1)
	}
	if b := tx.root(bucketT1); b != nil {
		return b, nil
	}
	return nil, ErrNotFound
}

// T1Frames is the frame bucket of one routine inside a write transaction.
type T1Frames struct {
	b     *bucket
	stats *bucket
	id    []byte
	n, sz uint64
}

// T1Writer opens (creating) the frame bucket of a routine for writing. Call
// Done after the last Put to update the routine's counters.
func (tx *Tx) T1Writer(capID string) (*T1Frames, error) {
	root, err := t1Tx(tx)
	if err != nil {
		return nil, err
	}
	b, err := root.CreateBucketIfNotExists([]byte(capID))
	if err != nil {
		return nil, err
	}
	stats, err := tx.createRoot(bucketT1Stats)
	if err != nil {
		return nil, err
	}
	return &T1Frames{b: b, stats: stats, id: []byte(capID)}, nil
}

// NextSeq returns a number unique within the routine.
func (w *T1Frames) NextSeq() (uint64, error) { return w.b.NextSequence() }

// Put stores one block of frames frames.
func (w *T1Frames) Put(key, block []byte, frames int) error {
	w.n += uint64(frames)
	w.sz += uint64(len(key) + len(block))
	return w.b.Put(key, block)
}

// Done adds what was put to the routine's counters.
func (w *T1Frames) Done() error {
	frames, size := t1Stats(w.stats.Get(w.id))
	return w.stats.Put(w.id, t1StatsValue(frames+w.n, size+w.sz))
}

func t1Stats(v []byte) (frames, size uint64) {
	if len(v) != 16 {
		return 0, 0
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
}

func t1StatsValue(frames, size uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), frames)
	return binary.BigEndian.AppendUint64(v, size)
}

// T1Stats returns the stored frame count and bytes of a routine.
func (tx *Tx) T1Stats(capID string) (frames, size uint64) {
	b := tx.root(bucketT1Stats)
	if b == nil {
		return 0, 0
	}
	return t1Stats(b.Get([]byte(capID)))
}

// T1Seen reports whether (scope, batchID) was stored before, and marks it
// (with time at) when it was not.
func (tx *Tx) T1Seen(scope, batchID string, at int64) (bool, error) {
	d, err := tx.T1Dedup()
	if err != nil {
		return false, err
	}
	seen, err := d.Seen(scope, batchID, at)
	if err != nil {
		return false, err
	}
	return seen, d.Flush()
}

// The batch-id table (schema 3, t1_seen_g) groups the ids of a sender that
// differ only in their last byte, as the ids of a counting sender do
// ("gw-7-1230" ... "gw-7-1239"): one record per group,
//
//	key:   scope 0x00 batch_id without its last byte
//	value: seen_at(unix ns, uint64 BE; the newest mark of the group)
//	       + a 256-bit set of the last bytes seen (32 bytes)
//
// so that a write of many small batches reads and puts one record per ten
// or sixteen of them instead of one each. Files of schema 2 have the
// table of one record per id (t1_seen: scope 0x00 batch_id → seen_at):
// it is still looked up, never written, and pruned until it is empty.
const t1SeenValueLen = 8 + 32

// T1Dedup is the batch-id table inside a write transaction, opened once for
// the many batches of one write: Seen marks in memory, Flush puts the
// groups it changed.
type T1Dedup struct {
	b      *bucket
	legacy *cursor // t1_seen of schema 2, nil when absent or empty
	// groups are the records read or changed by this write, in the order
	// first met; index finds them by key once there are a few.
	groups []*t1SeenGroup
	index  map[string]*t1SeenGroup
	key    []byte // scratch
	arena  []byte // the groups' keys
	// The first group, its key and the groups' first slots live here (one
	// allocation for a write of one batch); after Flush they are never
	// reused, as bbolt keeps what was put until the commit.
	first              t1SeenGroup
	firstUsed          bool
	slots              [4]*t1SeenGroup
	keyScratch, keyArr [64]byte
}

// t1SeenGroup is one record of the table, as this write leaves it.
type t1SeenGroup struct {
	key   []byte
	v     [t1SeenValueLen]byte
	dirty bool
}

// group returns the record of d.key, read from the table when first met.
func (d *T1Dedup) group() *t1SeenGroup {
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
	var g *t1SeenGroup
	if !d.firstUsed {
		d.firstUsed = true
		g = &d.first
		g.key = key
	} else {
		g = &t1SeenGroup{key: key}
	}
	if v := d.b.Get(d.key); len(v) == t1SeenValueLen {
		copy(g.v[:], v)
	}
	d.groups = append(d.groups, g)
	switch {
	case d.index != nil:
		d.index[string(g.key)] = g
	case len(d.groups) > 8:
		d.index = make(map[string]*t1SeenGroup, 2*len(d.groups))
		for _, g := range d.groups {
			d.index[string(g.key)] = g
		}
	}
	return g
}

// T1Dedup opens (creating) the batch-id table for writing.
func (tx *Tx) T1Dedup() (*T1Dedup, error) {
	b, err := tx.createRoot(bucketT1SeenG)
	if err != nil {
		return nil, err
	}
	d := &T1Dedup{b: b}
	d.groups, d.key, d.arena = d.slots[:0], d.keyScratch[:0], d.keyArr[:0]
	if old := tx.root(bucketT1Seen); old != nil {
		if c := old.Cursor(); !isNil(c.First()) {
			d.legacy = c
		}
	}
	return d, nil
}

func isNil(k, _ []byte) bool { return k == nil }

// Seen reports whether (scope, batchID) was stored before (or earlier in
// this write), and marks it (with time at) when it was not. batchID must
// not be empty. The mark is stored by Flush.
func (d *T1Dedup) Seen(scope, batchID string, at int64) (bool, error) {
	if batchID == "" {
		return false, errors.New("t1 dedup: empty batch id")
	}
	last := batchID[len(batchID)-1]
	d.key = append(append(append(d.key[:0], scope...), 0), batchID[:len(batchID)-1]...)
	g := d.group()
	bit := &g.v[8+last>>3]
	if *bit&(1<<(last&7)) != 0 {
		return true, nil
	}
	if d.legacy != nil {
		d.key = append(d.key, last)
		if k, _ := d.legacy.Seek(d.key); bytes.Equal(k, d.key) {
			return true, nil
		}
	}
	*bit |= 1 << (last & 7)
	if uint64(at) > binary.BigEndian.Uint64(g.v[:8]) {
		binary.BigEndian.PutUint64(g.v[:8], uint64(at))
	}
	g.dirty = true
	return false, nil
}

// Flush puts the records that Seen changed, in key order.
func (d *T1Dedup) Flush() error {
	dirty := slices.DeleteFunc(d.groups, func(g *t1SeenGroup) bool { return !g.dirty })
	slices.SortFunc(dirty, func(a, b *t1SeenGroup) int { return bytes.Compare(a.key, b.key) })
	for _, g := range dirty {
		// bbolt keeps the value until the commit: g is not reused.
		if err := d.b.Put(g.key, g.v[:]); err != nil {
			return err
		}
	}
	d.groups, d.index, d.arena = nil, nil, nil // a later Seen reads the records again
	d.firstUsed = true                         // and puts new groups
	return nil
}

// T1Scan calls fn for the frames of a routine with from ≤ key < to (nil
// bounds are open), in key order, until fn returns false. The slices are
// valid only inside fn.
func (tx *Tx) T1Scan(capID string, from, to []byte, fn func(k, v []byte) bool) error {
	root := tx.root(bucketT1)
	if root == nil {
		return nil
	}
	b := root.Bucket([]byte(capID))
	if b == nil {
		return nil
	}
	c := b.Cursor()
	var k, v []byte
	if from != nil {
		k, v = c.Seek(from)
	} else {
		k, v = c.First()
	}
	for ; k != nil; k, v = c.Next() {
		if to != nil && bytes.Compare(k, to) >= 0 {
			return nil
		}
		if !fn(k, v) {
			return nil
		}
	}
	return nil
}

// T1Routines lists the routines that have a frame bucket.
func (tx *Tx) T1Routines() []string {
	root := tx.root(bucketT1)
	if root == nil {
		return nil
	}
	var out []string
	_ = root.ForEachBucket(func(k []byte) error {
		out = append(out, string(k))
		return nil
	})
	return out
}

// T1Prune deletes a routine's oldest blocks: those whose key time is before
// before (unix ns), and then the oldest until the routine holds at most
// maxBytes; at most max blocks per call. count tells how many frames a
// block holds. It returns the frames and the blocks deleted.
func (tx *Tx) T1Prune(capID string, before int64, maxBytes uint64, max int, count func(block []byte) int) (frames, blocks int, err error) {
	root := tx.root(bucketT1)
	if root == nil {
		return 0, 0, nil
	}
	b := root.Bucket([]byte(capID))
	if b == nil {
		return 0, 0, nil
	}
	stats, err := tx.createRoot(bucketT1Stats)
	if err != nil {
		return 0, 0, err
	}
	total, size := t1Stats(stats.Get([]byte(capID)))
	c := b.Cursor()
	for k, v := c.First(); k != nil && blocks < max; k, v = c.First() {
		if T1KeyTime(k) >= before && (maxBytes == 0 || size <= maxBytes) {
			break
		}
		sz, fr := uint64(len(k)+len(v)), count(v)
		if err := c.Delete(); err != nil {
			return frames, blocks, err
		}
		blocks++
		frames += fr
		total -= min(uint64(fr), total)
		size -= min(sz, size)
	}
	if blocks > 0 {
		err = stats.Put([]byte(capID), t1StatsValue(total, size))
	}
	return frames, blocks, err
}

// T1PruneSeen deletes batch-id records older than before (unix ns), at most
// max of them: the groups whose newest mark is older, and the records of
// the schema 2 table (dropped once empty).
func (tx *Tx) T1PruneSeen(before int64, max int) (int, error) {
	n := 0
	for _, name := range [][]byte{bucketT1SeenG, bucketT1Seen} {
		b := tx.root(name)
		if b == nil {
			continue
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && n < max; k, v = c.Next() {
			if len(v) >= 8 && int64(binary.BigEndian.Uint64(v)) < before {
				if err := c.Delete(); err != nil {
					return n, err
				}
				n++
			}
		}
		if k, _ := b.Cursor().First(); k == nil && bytes.Equal(name, bucketT1Seen) {
			if err := tx.deleteRoot(name); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// ---- uplink outbox ----

// T1Enqueue appends a batch to the uplink outbox; build makes it from the
// outbox sequence number (so the number can name the batch).
func (tx *Tx) T1Enqueue(build func(seq uint64) []byte) (uint64, error) {
	b, err := tx.createRoot(bucketT1Out)
	if err != nil {
		return 0, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	return seq, b.Put(binary.BigEndian.AppendUint64(nil, seq), build(seq))
}

// T1Outbox returns up to max queued batches in order (copies).
func (tx *Tx) T1Outbox(max int) (seqs []uint64, batches [][]byte) {
	b := tx.root(bucketT1Out)
	if b == nil {
		return nil, nil
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(seqs) < max; k, v = c.Next() {
		seqs = append(seqs, binary.BigEndian.Uint64(k))
		batches = append(batches, append([]byte(nil), v...))
	}
	return seqs, batches
}

// T1OutboxLen counts the queued batches.
func (tx *Tx) T1OutboxLen() int {
	b := tx.root(bucketT1Out)
	if b == nil {
		return 0
	}
	return b.KeyN()
}

// T1Ack removes a forwarded batch from the outbox.
func (tx *Tx) T1Ack(seq uint64) error {
	b := tx.root(bucketT1Out)
	if b == nil {
		return errors.New("t1 outbox is missing")
	}
	return b.Delete(binary.BigEndian.AppendUint64(nil, seq))
}

// T1OutboxFrom returns the queued batches from seq from on, in order
// (copies): at most max, and past the first at most maxBytes in all.
func (tx *Tx) T1OutboxFrom(from uint64, max, maxBytes int) (seqs []uint64, batches [][]byte) {
	b := tx.root(bucketT1Out)
	if b == nil {
		return nil, nil
	}
	c, n := b.Cursor(), 0
	for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, from)); k != nil && len(seqs) < max && (n == 0 || n+len(v) <= maxBytes); k, v = c.Next() {
		seqs, batches, n = append(seqs, binary.BigEndian.Uint64(k)), append(batches, append([]byte(nil), v...)), n+len(v)
	}
	return seqs, batches
}

// T1OutboxPut replaces the queued batch seq (an upgrade's rewrite).
func (tx *Tx) T1OutboxPut(seq uint64, v []byte) error {
	b, err := tx.createRoot(bucketT1Out)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, seq), v)
}

// T1AckBefore removes up to max queued batches before seq, oldest first,
// and returns how many it removed.
func (tx *Tx) T1AckBefore(seq uint64, max int) (int, error) {
	b := tx.root(bucketT1Out)
	if b == nil {
		return 0, nil
	}
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < max && binary.BigEndian.Uint64(k) < seq; k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
