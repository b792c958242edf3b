package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A write-set is what one group commit changed, the payload of one
// commit-log record. Its byte layout:
//
//	version   1 byte, WriteSetVersion
//	ops       until the end, each:
//	  kind    1 byte (opPut, opDelete, opCreateBucket, opDeleteBucket, opSetSeq)
//	  path    uvarint length, then the bucket path (layer.go: each name
//	          of the path as a uvarint length and its bytes)
//	  opPut:    uvarint key length, key, uvarint value length, value
//	  opDelete: uvarint key length, key
//	  opSetSeq: uvarint sequence
//	  (opCreateBucket and opDeleteBucket have nothing more)
//
// Replayed in order onto a layer (layer.go) the ops give the state the
// group left. Keys are 1 to bbolt's MaxKeySize bytes, values at most its
// MaxValueSize, paths at most maxPathLen; a record breaking a limit is
// corrupt.
const WriteSetVersion = 1

const (
	opPut byte = 1 + iota
	opDelete
	opCreateBucket
	opDeleteBucket
	opSetSeq
)

const (
	maxKeyLen   = 32768         // bbolt's MaxKeySize
	maxValueLen = (1 << 31) - 2 // bbolt's MaxValueSize
	maxPathLen  = 4*maxKeyLen + 16
)

// op is one decoded operation of a write-set.
type op struct {
	kind     byte
	path     string
	key, val []byte
	seq      uint64
}

// errBadWriteSet is a write-set that does not decode.
var errBadWriteSet = errors.New("malformed write-set")

func appendOpHead(dst []byte, kind byte, path string) []byte {
	dst = append(dst, kind)
	dst = binary.AppendUvarint(dst, uint64(len(path)))
	return append(dst, path...)
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// appendOp appends the encoding of o to the ops of a write-set (the
// version byte comes first, once: the writer puts it before the ops).
func appendOp(dst []byte, o op) []byte {
	dst = appendOpHead(dst, o.kind, o.path)
	switch o.kind {
	case opPut:
		dst = appendBytes(dst, o.key)
		dst = appendBytes(dst, o.val)
	case opDelete:
		dst = appendBytes(dst, o.key)
	case opSetSeq:
		dst = binary.AppendUvarint(dst, o.seq)
	}
	return dst
}

// decodeWriteSet calls fn with each op of ws in order; the slices alias
// ws.
func decodeWriteSet(ws []byte, fn func(op) error) error {
	if len(ws) == 0 || ws[0] != WriteSetVersion {
		return fmt.Errorf("%w: version", errBadWriteSet)
	}
	b := ws[1:]
	read := func(limit uint64) ([]byte, bool) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > limit || n > uint64(len(b)-w) {
			return nil, false
		}
		v := b[w : w+int(n)]
		b = b[w+int(n):]
		return v, true
	}
	for len(b) > 0 {
		o := op{kind: b[0]}
		at := len(ws) - len(b)
		b = b[1:]
		p, ok := read(maxPathLen)
		if !ok || !validPath(string(p)) {
			return fmt.Errorf("%w: bucket path at offset %d", errBadWriteSet, at)
		}
		o.path = string(p)
		switch o.kind {
		case opPut:
			if o.key, ok = read(maxKeyLen); ok && len(o.key) > 0 {
				o.val, ok = read(maxValueLen)
			} else {
				ok = false
			}
		case opDelete:
			o.key, ok = read(maxKeyLen)
			ok = ok && len(o.key) > 0
		case opCreateBucket, opDeleteBucket:
		case opSetSeq:
			var w int
			o.seq, w = binary.Uvarint(b)
			if ok = w > 0; ok {
				b = b[w:]
			}
		default:
			return fmt.Errorf("%w: op kind %d at offset %d", errBadWriteSet, o.kind, at)
		}
		if !ok {
			return fmt.Errorf("%w: op at offset %d", errBadWriteSet, at)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// Replay applies the ops of the write-set ws to l, copying what it
// keeps.
func (l *Layer) Replay(ws []byte) error {
	return decodeWriteSet(ws, func(o op) error {
		switch o.kind {
		case opPut:
			l.put(o.path, clone(o.key), clone(o.val))
		case opDelete:
			l.del(o.path, clone(o.key))
		case opCreateBucket:
			l.createBucket(o.path)
		case opDeleteBucket:
			l.deleteBucket(o.path)
		case opSetSeq:
			l.setSeq(o.path, o.seq)
		}
		return nil
	})
}

// clone copies b; the copy of an empty b is empty, not nil.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }
