package tier1

import (
	"encoding/binary"
	"errors"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The export log (t1_outbox, records.go): each queued batch is kept with
// a header that lets the exports (package tier1/export) count without
// decoding,
//
//	0xc1 frames(uint32 BE) cum_frames(uint64 BE) cum_bytes(uint64 BE) at(unix ns, int64 BE) batch
//
// cum_frames and cum_bytes are the frames and batch bytes queued before
// this entry since the log began (meta key OutboxCumKey keeps the
// running totals, so they survive the entries' deletion), at the time it
// was queued. 0xc1 is never the first byte of a msgpack value, so an
// entry of an older file (the bare batch) is told apart.
const (
	outboxMagic     = 0xc1
	OutboxHeaderLen = 1 + 4 + 8 + 8 + 8
	// OutboxCumKey is the meta key of the log's running totals.
	OutboxCumKey = "t1_outbox_cum"
)

// OutboxEntry is the header of a queued batch.
type OutboxEntry struct {
	Frames              uint32
	CumFrames, CumBytes uint64
	At                  int64
}

// AppendOutboxEntry appends the stored form of batch with header e.
func AppendOutboxEntry(dst []byte, e OutboxEntry, batch []byte) []byte {
	return append(AppendOutboxHeader(dst, e), batch...)
}

// AppendOutboxHeader appends the header e (OutboxHeaderLen bytes).
func AppendOutboxHeader(dst []byte, e OutboxEntry) []byte {
	dst = append(dst, outboxMagic)
	dst = binary.BigEndian.AppendUint32(dst, e.Frames)
	dst = binary.BigEndian.AppendUint64(dst, e.CumFrames)
	dst = binary.BigEndian.AppendUint64(dst, e.CumBytes)
	return binary.BigEndian.AppendUint64(dst, uint64(e.At))
}

// ParseOutboxEntry splits a stored entry into its header and batch; ok is
// false for an entry without a header (an older file's bare batch).
func ParseOutboxEntry(v []byte) (e OutboxEntry, batch []byte, ok bool) {
	if len(v) < OutboxHeaderLen || v[0] != outboxMagic {
		return OutboxEntry{}, v, false
	}
	e.Frames = binary.BigEndian.Uint32(v[1:])
	e.CumFrames = binary.BigEndian.Uint64(v[5:])
	e.CumBytes = binary.BigEndian.Uint64(v[13:])
	e.At = int64(binary.BigEndian.Uint64(v[21:]))
	return e, v[OutboxHeaderLen:], true
}

// OutboxTotals reads the log's running totals: frames and batch bytes
// ever queued, and the seq after the last entry.
func OutboxTotals(tx *store.Tx) (frames, bytes, next uint64) {
	v := tx.Meta(OutboxCumKey)
	if len(v) != 24 {
		return 0, 0, 0
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), binary.BigEndian.Uint64(v[16:])
}

// PutOutboxTotals writes the log's running totals.
func PutOutboxTotals(tx *store.Tx, frames, bytes, next uint64) error {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 24), frames)
	v = binary.BigEndian.AppendUint64(v, bytes)
	return tx.PutMeta(OutboxCumKey, binary.BigEndian.AppendUint64(v, next))
}

// BatchFrames counts the frames of an encoded batch from its header,
// without decoding them.
func BatchFrames(batch []byte) (int, error) {
	r := wire.NewMsgpackReader(batch, wire.DefaultMsgpackLimits)
	if _, err := r.ReadArrayHeader(); err != nil {
		return 0, err
	}
	for range 2 {
		if _, err := r.ReadString(); err != nil {
			return 0, err
		}
	}
	n, err := r.ReadArrayHeader()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, errors.New("tier1: negative frame count")
	}
	return n, nil
}

// HeaderSourceAgent names the agent a forwarded batch comes from (the
// upstream deduplicates batch ids within it).
const HeaderSourceAgent = transport.HeaderSourceAgent

// The log's records (t1_outbox): seq(uint64 BE) → an entry as above
// (or an older file's bare batch), seq from the bucket's sequence.

// EnqueueOutbox appends an entry to the export log; build makes it from
// the entry's seq (so the number can name the batch).
func EnqueueOutbox(tx *store.Tx, build func(seq uint64) []byte) (uint64, error) {
	b, err := outboxRecords.CreateRaw(tx)
	if err != nil {
		return 0, err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], seq)
	return seq, b.Put(key[:], build(seq))
}

// OutboxFrom returns the queued entries from seq from on, in order
// (copies): at most max, and past the first at most maxBytes in all.
func OutboxFrom(tx *store.Tx, from uint64, max, maxBytes int) (seqs []uint64, entries [][]byte) {
	n := 0
	_ = outboxRecords.Raw(tx).Scan(binary.BigEndian.AppendUint64(nil, from), func(k, v []byte) error {
		if len(seqs) >= max || n > 0 && n+len(v) > maxBytes {
			return store.ErrStop
		}
		seqs, entries, n = append(seqs, binary.BigEndian.Uint64(k)), append(entries, append([]byte(nil), v...)), n+len(v)
		return nil
	})
	return seqs, entries
}

// OutboxLen counts the queued entries.
func OutboxLen(tx *store.Tx) int { return outboxRecords.Count(tx) }

// PutOutbox replaces the queued entry seq (an upgrade's rewrite).
func PutOutbox(tx *store.Tx, seq uint64, v []byte) error {
	b, err := outboxRecords.CreateRaw(tx)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, seq), v)
}

// AckOutboxBefore removes up to max queued entries before seq, oldest
// first, and returns how many it removed.
func AckOutboxBefore(tx *store.Tx, seq uint64, max int) (int, error) {
	b, n := outboxRecords.Raw(tx), 0
	err := b.Scan(nil, func(k, _ []byte) error {
		if n >= max || binary.BigEndian.Uint64(k) >= seq {
			return store.ErrStop
		}
		n++
		return b.Delete(k)
	})
	return n, err
}
