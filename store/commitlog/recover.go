package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// ErrCorrupt is damage a crash cannot explain: a record that does not
// decode before the end of what was acknowledged, a gap in the sequence
// numbers, a checkpoint the log does not reach. The error is a
// *CorruptError naming the segment and the offset.
var ErrCorrupt = errors.New("commitlog: corrupt")

// CorruptError is an ErrCorrupt with where it was found.
type CorruptError struct {
	Segment string // file name of the segment ("" when about the log as a whole)
	Offset  int64  // byte offset in the segment
	Reason  string
	Err     error // what the reader reported, if anything
}

func (e *CorruptError) Error() string {
	s := "commitlog: corrupt"
	if e.Segment != "" {
		s += fmt.Sprintf(": segment %s offset %d", e.Segment, e.Offset)
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// segment is what a scan found in one segment file.
type segment struct {
	name  string
	first uint64 // seq of its first record (from the name and the header)
	next  uint64 // seq after its last record
	end   int64  // offset after its last record
	size  int64  // file size
	// tail is the end of the damaged bytes after end that recovery
	// zeroes (0 when there are none): the torn last group.
	tail int64
}

// layout is the log as a scan found it, and what recovery must do.
type layout struct {
	segs    []segment // in order; the last is the one appended to
	stale   []string  // segments wholly covered by the checkpoint
	unborn  string    // a last segment whose creation a crash interrupted
	records uint64
}

// inspect scans every segment in dir and checks it against checkpoint;
// it changes nothing.
func inspect(fsys FS, dir string, checkpoint, upTo uint64) (*layout, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, fmt.Errorf("commitlog: list %s: %w", filepath.Base(dir), err)
	}
	var segs []segment
	for _, n := range names {
		if first, ok := parseSegmentName(n); ok {
			segs = append(segs, segment{name: n, first: first})
		}
	}
	lay := &layout{}
	// Segments wholly before the checkpoint: Trim removes them oldest
	// first, and a crash may undo a removal the directory had not synced.
	for len(segs) > 1 && segs[1].first <= checkpoint+1 {
		lay.stale = append(lay.stale, segs[0].name)
		segs = segs[1:]
	}
	if upTo > 0 {
		// A live check: segments begun after the records it verifies
		// are the writer's, not yet its.
		for i := range segs {
			if i > 0 && segs[i].first > upTo {
				segs = segs[:i]
				break
			}
		}
	}
	for i := range segs {
		last := i == len(segs)-1
		s := &segs[i]
		data, err := readAll(fsys, filepath.Join(dir, s.name))
		if err != nil {
			return nil, fmt.Errorf("commitlog: read %s: %w", s.name, err)
		}
		s.size = int64(len(data))
		first, herr := readSegmentHeader(data)
		if herr != nil {
			if last && allZero(data[min(len(data), SegmentHeaderSize):]) {
				// Created, not yet synced, when the power went: it
				// never held a record.
				lay.unborn = s.name
				segs = segs[:i]
				break
			}
			return nil, &CorruptError{Segment: s.name, Reason: "segment header", Err: herr}
		}
		if first != s.first {
			return nil, &CorruptError{Segment: s.name, Offset: 8, Reason: fmt.Sprintf("header says first record %d, name %d", first, s.first)}
		}
		if i > 0 && segs[i-1].next != s.first {
			return nil, &CorruptError{Segment: s.name, Reason: fmt.Sprintf("sequence gap: segment %s ends before %d, this one starts at %d", segs[i-1].name, segs[i-1].next, s.first)}
		}
		next, end, tail, err := scanRecords(data, first, upTo, nil)
		if err == nil && tail > 0 && !last {
			err = &CorruptError{Offset: int64(end), Reason: "damaged record in a segment that is not the last"}
		}
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				ce.Segment = s.name
			}
			return nil, err
		}
		s.next, s.end, s.tail = next, int64(end), int64(tail)
		lay.records += next - first
	}
	lay.segs = segs
	if len(segs) > 0 {
		if f := segs[0].first; f > checkpoint+1 {
			return nil, &CorruptError{Segment: segs[0].name, Reason: fmt.Sprintf("log starts at record %d, the checkpoint is %d: records %d..%d are missing", f, checkpoint, checkpoint+1, f-1)}
		}
		if l := segs[len(segs)-1].next - 1; l < checkpoint {
			return nil, &CorruptError{Segment: segs[len(segs)-1].name, Reason: fmt.Sprintf("the checkpoint names record %d, the log ends at %d", checkpoint, l)}
		}
	}
	return lay, nil
}

// scanRecords reads the records of a segment's bytes (header included)
// whose first record is first, calling visit (when not nil) for each.
// It returns the seq after the last record, the offset after it, and
// the end of the damaged bytes that follow (0 when the records end
// cleanly in zeros). Damage with a record of a later group after it is
// a *CorruptError (Segment unset). upTo, when not 0, ends the records at
// that seq: a live check reads a log the writer appends to, and a record
// after upTo may be half written while one after it is already there.
func scanRecords(data []byte, first, upTo uint64, visit func(Record) error) (next uint64, end, tail int, err error) {
	off, expect := SegmentHeaderSize, first
	for {
		if upTo > 0 && expect > upTo {
			return expect, off, 0, nil
		}
		rec, n, rerr := ReadRecord(data[off:])
		if rerr == nil && rec.Seq == expect {
			if visit != nil {
				if err := visit(rec); err != nil {
					return 0, 0, 0, err
				}
			}
			off += n
			expect++
			continue
		}
		if rerr == nil {
			rerr = fmt.Errorf("sequence number %d where %d was due", rec.Seq, expect)
		}
		last := lastNonZero(data[off:])
		if last == 0 {
			return expect, off, 0, nil // clean end
		}
		if at, ok := laterGroup(data, off, off+last, expect); ok {
			return 0, 0, 0, &CorruptError{Offset: int64(off), Err: rerr,
				Reason: fmt.Sprintf("record %d is damaged and a later group follows it at offset %d", expect, at)}
		}
		return expect, off, off + last, nil
	}
}

// laterGroup looks in data[from:to] for a record of a group that began
// after seq expect, and returns its offset.
func laterGroup(data []byte, from, to int, expect uint64) (int, bool) {
	for i := from; i < to && i+RecordHeaderSize <= len(data); i++ {
		seq := binary.BigEndian.Uint64(data[i+8:])
		back := uint64(binary.BigEndian.Uint32(data[i+16:]))
		if seq <= expect || seq-back <= expect {
			continue
		}
		// The length is compared as read: as an int it may be negative
		// on a 32-bit machine.
		n32 := binary.BigEndian.Uint32(data[i:])
		if n32 > MaxRecord || uint64(i)+RecordHeaderSize+uint64(n32) > uint64(len(data)) {
			continue
		}
		n := int(n32)
		if crc32.Checksum(data[i+8:i+RecordHeaderSize+n], castagnoli) == binary.BigEndian.Uint32(data[i+4:]) {
			return i, true
		}
	}
	return 0, false
}

// lastNonZero is one more than the index of the last non-zero byte of b
// (0 when b is all zeros).
func lastNonZero(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i + 1
		}
	}
	return 0
}

func readAll(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data, nil
}
