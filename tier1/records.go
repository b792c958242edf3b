package tier1

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/synapse-edge/synapse/store"
)

// Tier-1's records live in the store's file, in buckets this package
// keeps through store.Records (the bucket names, keys and values are
// those the store kept them in before, schema 3 on: a file opens and
// reads as it did):
//
//	t1/<capability_id>   key: ts(int64 BE, sign bit flipped) device_id 0x00 seq(uint64 BE)
//	                     value: a block of frames (block.go); ts is the
//	                     block's first frame's
//	t1_stats             capability_id → frames(uint64 BE) bytes(uint64 BE)
//	t1_seen_o            scope 0x00 batch_id minus its last byte, its
//	                     final digits after their number (orderedHead) →
//	                     received_at(unix ns, uint64 BE, the newest) and
//	                     the set of last bytes seen (seen.go)
//	t1_seen_g            (schema 3 to 8, read and pruned only) the same
//	                     with the plain batch_id minus its last byte
//	t1_seen              (schema 2, read and pruned only) scope 0x00
//	                     batch_id → received_at(unix ns, uint64 BE)
//	t1_outbox            seq(uint64 BE) → a batch to forward upstream
//	                     (outbox.go)
//
// Frame keys sort by time, then device, then arrival, so range scans
// answer time queries and retention deletes from the front. A block's
// bytes counted in t1_stats are its key's and its value's.
var (
	frameRecords  = store.RawRecords("t1")
	statsRecords  = store.RawRecords("t1_stats")
	seenRecords   = store.RawRecords("t1_seen_o")
	seenV3Records = store.RawRecords("t1_seen_g")
	seenV2Records = store.RawRecords("t1_seen")
	outboxRecords = store.RawRecords("t1_outbox")
)

// FrameKey appends the store key of a block of frames: its first frame's
// time, the device, and seq (a number unique within the routine).
func FrameKey(dst []byte, ts int64, device string, seq uint64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts)^(1<<63))
	dst = append(dst, device...)
	dst = append(dst, 0)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// FrameKeyTime is the timestamp part of a frame key.
func FrameKeyTime(k []byte) int64 {
	if len(k) < 8 {
		return math.MinInt64
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
}

// FrameKeyDevice is the device part of a frame key.
func FrameKeyDevice(k []byte) []byte {
	if len(k) < 17 {
		return nil
	}
	return k[8 : len(k)-9]
}

// FrameKeySeq is the sequence part of a frame key (0 if k is not one).
// With FrameKeyTime and FrameKeyDevice it gives back what FrameKey was
// built from.
func FrameKeySeq(k []byte) uint64 {
	if len(k) < 17 {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(k)-8:])
}

// frameWriter puts the blocks of one routine in a write transaction.
// done adds what was put to the routine's counters.
type frameWriter struct {
	b, stats store.RawBucket
	id       []byte
	n, sz    uint64
}

// openFrames opens (creating) the frame bucket of a routine for writing.
func openFrames(tx *store.Tx, capID string) (frameWriter, error) {
	root, err := frameRecords.CreateRaw(tx)
	if err != nil {
		return frameWriter{}, err
	}
	id := []byte(capID)
	b, err := root.CreateBucket(id)
	if err != nil {
		return frameWriter{}, err
	}
	stats, err := statsRecords.CreateRaw(tx)
	if err != nil {
		return frameWriter{}, err
	}
	return frameWriter{b: b, stats: stats, id: id}, nil
}

// nextSeq returns a number unique within the routine.
func (w *frameWriter) nextSeq() (uint64, error) { return w.b.NextSequence() }

// put stores one block of frames frames.
func (w *frameWriter) put(key, block []byte, frames int) error {
	w.n += uint64(frames)
	w.sz += uint64(len(key) + len(block))
	return w.b.Put(key, block)
}

// done adds what was put to the routine's counters.
func (w *frameWriter) done() error {
	frames, size := parseStats(w.stats.Get(w.id))
	return w.stats.Put(w.id, statsValue(frames+w.n, size+w.sz))
}

func parseStats(v []byte) (frames, size uint64) {
	if len(v) != 16 {
		return 0, 0
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
}

func statsValue(frames, size uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), frames)
	return binary.BigEndian.AppendUint64(v, size)
}

// storedStats returns the stored frame count and bytes of a routine.
func storedStats(tx *store.Tx, capID string) (frames, size uint64) {
	return parseStats(statsRecords.Raw(tx).Get([]byte(capID)))
}

// scanFrames calls fn for the blocks of a routine with from ≤ key < to
// (nil bounds are open), in key order, until fn returns false. The
// slices are valid only inside fn.
func scanFrames(tx *store.Tx, capID string, from, to []byte, fn func(k, v []byte) bool) error {
	return frameRecords.Raw(tx).Bucket([]byte(capID)).Scan(from, func(k, v []byte) error {
		if to != nil && bytes.Compare(k, to) >= 0 || !fn(k, v) {
			return store.ErrStop
		}
		return nil
	})
}

// storedRoutines lists the routines that have a frame bucket.
func storedRoutines(tx *store.Tx) []string {
	var out []string
	_ = frameRecords.Raw(tx).Buckets(func(name []byte) error {
		out = append(out, string(name))
		return nil
	})
	return out
}

// pruneFrames deletes a routine's oldest blocks: those whose key time is
// before before (unix ns), and then the oldest until the routine holds
// at most maxBytes; at most max blocks per call. count tells how many
// frames a block holds. It returns the frames and the blocks deleted.
func pruneFrames(tx *store.Tx, capID string, before int64, maxBytes uint64, max int, count func(block []byte) int) (frames, blocks int, err error) {
	id := []byte(capID)
	b := frameRecords.Raw(tx).Bucket(id)
	if !b.Exists() {
		return 0, 0, nil
	}
	stats, err := statsRecords.CreateRaw(tx)
	if err != nil {
		return 0, 0, err
	}
	total, size := parseStats(stats.Get(id))
	err = b.Scan(nil, func(k, v []byte) error {
		if blocks >= max || FrameKeyTime(k) >= before && (maxBytes == 0 || size <= maxBytes) {
			return store.ErrStop
		}
		sz, fr := uint64(len(k)+len(v)), count(v)
		if err := b.Delete(k); err != nil {
			return err
		}
		blocks++
		frames += fr
		total -= min(uint64(fr), total)
		size -= min(sz, size)
		return nil
	})
	if err != nil {
		return frames, blocks, err
	}
	if blocks > 0 {
		err = stats.Put(id, statsValue(total, size))
	}
	return frames, blocks, err
}
