package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The byte layout of a segment file. Every integer is big-endian.
//
// A segment is named after the sequence number of its first record, as
// 16 lower-case hex digits and ".log" (0000000000000001.log). It is
// preallocated to Options.SegmentSize (larger when one group of records
// needs more), so an append changes no file size and its fdatasync no
// inode; the preallocated space reads as zeros.
//
// Segment header, 20 bytes:
//
//	offset size field
//	     0    6 magic "SYNLOG"
//	     6    2 version (1)
//	     8    8 first: the sequence number of the segment's first record
//	    16    4 CRC-32C (Castagnoli) of bytes 0..16
//
// Then records, one after another, unaligned. Record, 20 bytes of header
// and the payload:
//
//	offset size field
//	     0    4 length of the payload, at most MaxRecord
//	     4    4 CRC-32C of bytes 8..20+length (seq, back and payload)
//	     8    8 seq: the record's sequence number, one more than the record
//	            before it (in this segment or the one before); never 0
//	    16    4 back: seq minus the sequence number of the first record of
//	            its group (0 for the first); a group is the records of one
//	            Append, written with one write and made durable with one
//	            fdatasync
//	    20    n payload
//
// The records of a segment end where a record header is all zeros (the
// preallocated space) or where fewer than 20 bytes are left. A group never
// spans two segments, so a segment other than the last ends with a group
// that was made durable before the next segment was created.
//
// back tells recovery which damage a crash can explain: a write not
// covered by a completed fdatasync may reach the disk in part, in any
// order of its sectors, but only in the last group. A record that does
// not decode where the next one should be is the torn tail when every
// record found after it belongs to the same group (first seq of its group
// at most the expected one); a record of a later group after it means the
// damaged group had been acknowledged: corruption, not a crash.

const (
	// SegmentHeaderSize is the size of a segment's header.
	SegmentHeaderSize = 20
	// RecordHeaderSize is the size of a record's header.
	RecordHeaderSize = 20
	// MaxRecord is the largest payload of one record (32 MiB).
	MaxRecord = 32 << 20

	version = 1
	magic   = "SYNLOG"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of the record reader.
var (
	// ErrShort is a record or header cut off by the end of the data.
	ErrShort = errors.New("commitlog: record cut short")
	// ErrChecksum is a record whose CRC does not match its bytes.
	ErrChecksum = errors.New("commitlog: checksum mismatch")
	// ErrTooLarge is a record whose length is over MaxRecord.
	ErrTooLarge = errors.New("commitlog: record length over limit")
	// ErrZeroSeq is a record header with sequence number 0.
	ErrZeroSeq = errors.New("commitlog: record with sequence number 0")
	// ErrEnd is the all-zero header of the preallocated space: no record.
	ErrEnd = errors.New("commitlog: end of records")
	// ErrBadHeader is a segment header that does not decode.
	ErrBadHeader = errors.New("commitlog: bad segment header")
)

// Record is one decoded record; Payload aliases the decoded bytes.
type Record struct {
	Seq     uint64
	Back    uint32
	Payload []byte
}

// AppendRecord appends the encoding of one record to dst.
func AppendRecord(dst []byte, seq uint64, back uint32, payload []byte) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, 0, 0, 0, 0) // CRC, below
	dst = binary.BigEndian.AppendUint64(dst, seq)
	dst = binary.BigEndian.AppendUint32(dst, back)
	dst = append(dst, payload...)
	sum := crc32.Checksum(dst[start+8:], castagnoli)
	binary.BigEndian.PutUint32(dst[start+4:], sum)
	return dst
}

// ReadRecord decodes the record at the start of b and returns it and its
// encoded size. The header of the preallocated space (all zeros) is
// ErrEnd; fewer than RecordHeaderSize bytes are ErrEnd too when they are
// all zeros, else ErrShort.
func ReadRecord(b []byte) (Record, int, error) {
	if len(b) < RecordHeaderSize {
		if allZero(b) {
			return Record{}, 0, ErrEnd
		}
		return Record{}, 0, ErrShort
	}
	if allZero(b[:RecordHeaderSize]) {
		return Record{}, 0, ErrEnd
	}
	n := binary.BigEndian.Uint32(b)
	if n > MaxRecord {
		return Record{}, 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	seq := binary.BigEndian.Uint64(b[8:])
	if seq == 0 {
		return Record{}, 0, ErrZeroSeq
	}
	end := RecordHeaderSize + int(n)
	if len(b) < end {
		return Record{}, 0, ErrShort
	}
	if crc32.Checksum(b[8:end], castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return Record{}, 0, ErrChecksum
	}
	return Record{Seq: seq, Back: binary.BigEndian.Uint32(b[16:]), Payload: b[RecordHeaderSize:end:end]}, end, nil
}

// appendSegmentHeader appends the header of a segment whose first record
// is first.
func appendSegmentHeader(dst []byte, first uint64) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.BigEndian.AppendUint16(dst, version)
	dst = binary.BigEndian.AppendUint64(dst, first)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// readSegmentHeader decodes a segment header and returns its first
// sequence number.
func readSegmentHeader(b []byte) (uint64, error) {
	if len(b) < SegmentHeaderSize {
		return 0, fmt.Errorf("%w: %d bytes", ErrBadHeader, len(b))
	}
	if string(b[:6]) != magic {
		return 0, fmt.Errorf("%w: magic %q", ErrBadHeader, b[:6])
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.BigEndian.Uint32(b[16:]) {
		return 0, fmt.Errorf("%w: checksum mismatch", ErrBadHeader)
	}
	if v := binary.BigEndian.Uint16(b[6:]); v != version {
		return 0, fmt.Errorf("%w: version %d, this binary reads %d", ErrBadHeader, v, version)
	}
	first := binary.BigEndian.Uint64(b[8:])
	if first == 0 {
		return 0, fmt.Errorf("%w: first sequence number 0", ErrBadHeader)
	}
	return first, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// segmentName is the file name of the segment whose first record is first.
func segmentName(first uint64) string { return fmt.Sprintf("%016x.log", first) }

// parseSegmentName returns the first sequence number a segment's name
// gives, and false for a name that is not a segment's.
func parseSegmentName(name string) (uint64, bool) {
	if len(name) != 20 || name[16:] != ".log" {
		return 0, false
	}
	var v uint64
	for _, c := range name[:16] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, v != 0
}
