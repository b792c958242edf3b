package tier1

import (
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Queries: what the APIs read of the stored and the live frames, so that
// they only decode a request, call one of these and encode the answer.

// MaxFramesPerPage bounds FrameQuery.Limit.
const MaxFramesPerPage = 10_000

// FrameQuery selects stored frames of one routine.
type FrameQuery struct {
	// Since and Until bound the frames' ts (unix ns, of a routine with an
	// int field "ts"): Since ≤ ts < Until. Nil is no bound.
	Since, Until *int64
	// DeviceID, when not empty, keeps only the frames of that device.
	DeviceID string
	// Limit is the most frames in a page, 1 to MaxFramesPerPage.
	Limit int
	// PageToken continues a query after the page that gave it (its
	// FramePage.NextPageToken); empty for the first page.
	PageToken string
}

// FramePage is one page of stored frames.
type FramePage struct {
	// Desc is the routine's descriptor: the frames' field names and types.
	Desc *Descriptor
	// Frames are in time order of their blocks, then arrival: a block
	// holds one device's frames stored together (one batch, or the
	// batches a stream had stored in one write), in time order, within
	// BlockSpan; the frames of different devices in overlapping blocks
	// do not interleave.
	Frames []Frame
	// NextPageToken continues the query; empty after the last page.
	NextPageToken string
}

// Frames reads a page of routine capID's stored frames: capability_lacking
// for a routine this agent does not have, invalid_params for a bad limit
// or page token (with the field named).
func (in *Ingestor) Frames(capID string, q FrameQuery) (*FramePage, error) {
	d, ok := in.reg.Get(capID)
	if !ok {
		return nil, wire.Errorf(wire.CodeCapabilityLacking, "no routine %q", capID)
	}
	if q.Limit < 1 || q.Limit > MaxFramesPerPage {
		return nil, wire.Errorf(wire.CodeInvalidParams, "limit must be a whole number from 1 to %d", MaxFramesPerPage).With("field", "limit")
	}
	// Blocks are keyed by their first frame's ts and span at most
	// BlockSpan, so a scan starts that much before since.
	var from, to []byte
	if q.Since != nil {
		from = FrameKey(nil, *q.Since-BlockSpan, "", 0)
	}
	if q.Until != nil {
		to = FrameKey(nil, *q.Until, "", 0)
	}
	var afterKey []byte
	afterIdx := -1
	if q.PageToken != "" {
		p, err := decodePageToken(capID, q.PageToken)
		if err != nil {
			return nil, err
		}
		afterKey, afterIdx = FrameKey(nil, p.ts, p.device, p.seq), p.index
		from = afterKey
	}
	kts := tsField(d)
	page := &FramePage{Desc: d}
	var lastKey []byte
	lastIdx := 0
	more := false
	var scanErr error
	err := in.db.View(func(tx *store.Tx) error {
		return scanFrames(tx, capID, from, to, func(k, v []byte) bool {
			if q.DeviceID != "" && string(FrameKeyDevice(k)) != q.DeviceID {
				return true
			}
			br, err := NewBlockReader(v, d)
			if err != nil {
				scanErr = err
				return false
			}
			same := afterKey != nil && string(k) == string(afterKey)
			for i := 0; i < br.Len(); i++ {
				f, err := br.Next()
				if err != nil {
					scanErr = err
					return false
				}
				if same && i <= afterIdx {
					continue
				}
				if kts >= 0 {
					if t := f.At(kts); t.Kind() == KindInt &&
						(q.Since != nil && t.Int() < *q.Since || q.Until != nil && t.Int() >= *q.Until) {
						continue
					}
				}
				if len(page.Frames) == q.Limit {
					more = true
					return false
				}
				page.Frames = append(page.Frames, f)
				lastKey, lastIdx = append(lastKey[:0], k...), i
			}
			return true
		})
	})
	if err == nil {
		err = scanErr
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "read frames: %v", err)
	}
	if more {
		page.NextPageToken = encodePageToken(capID, pagePos{ts: FrameKeyTime(lastKey),
			device: string(FrameKeyDevice(lastKey)), seq: FrameKeySeq(lastKey), index: lastIdx})
	}
	return page, nil
}

// Stored is what the store holds of a routine.
type Stored struct {
	// Frames and Bytes are the frames kept and their stored size.
	Frames, Bytes uint64
	// OldestTS is the ts (unix ns) of the oldest block kept, 0 when none.
	OldestTS int64
}

// Stored reads routine capID's retention figures (zero for a routine with
// nothing stored).
func (in *Ingestor) Stored(capID string) (Stored, error) {
	var st Stored
	err := in.db.View(func(tx *store.Tx) error {
		st.Frames, st.Bytes = storedStats(tx, capID)
		return scanFrames(tx, capID, nil, nil, func(k, _ []byte) bool {
			st.OldestTS = FrameKeyTime(k)
			return false
		})
	})
	if err != nil {
		return Stored{}, wire.Errorf(wire.CodeSysStorage, "read the stored frames of %q: %v", capID, err)
	}
	return st, nil
}

// LiveFrames are the frames of routine capID in the live batches ls (of a
// Watcher), in order; with device not empty, only those whose device_id
// field is device. d is the routine's descriptor, nil when no batch of ls
// is of the routine.
func LiveFrames(ls []Live, capID, device string) (d *Descriptor, frames []Frame, err error) {
	for _, l := range ls {
		if l.Desc.CapabilityID != capID {
			continue
		}
		d = l.Desc
		dev := deviceField(d)
		for _, blk := range l.Blocks {
			br, err := NewBlockReader(blk, d)
			if err != nil {
				return nil, nil, err
			}
			for i := 0; i < br.Len(); i++ {
				f, err := br.Next()
				if err != nil {
					return nil, nil, err
				}
				if device != "" && (dev < 0 || f.At(dev).Kind() != KindStr || f.At(dev).Str() != device) {
					continue
				}
				frames = append(frames, f)
			}
		}
	}
	return d, frames, nil
}

// tsField is the index of a routine's ts field (int), or -1.
func tsField(d *Descriptor) int {
	for i, f := range d.Fields {
		if f.Name == "ts" && f.Type == TypeInt {
			return i
		}
	}
	return -1
}

// deviceField is the index of a routine's device_id field (str), or -1.
func deviceField(d *Descriptor) int {
	for i, f := range d.Fields {
		if f.Name == "device_id" && f.Type == TypeStr {
			return i
		}
	}
	return -1
}
