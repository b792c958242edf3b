package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Errors of the msgpack reader. Every error it returns wraps one of them;
// wrong-type errors are a [*MsgpackTypeError], which matches ErrMsgpackType.
var (
	// ErrMsgpackTruncated: the input ends before the value does (a header,
	// a payload, or a container that declares more elements than there are
	// bytes left).
	ErrMsgpackTruncated = errors.New("msgpack: truncated input")
	// ErrMsgpackTooLarge: a container declares more elements than
	// MsgpackLimits.MaxLen.
	ErrMsgpackTooLarge = errors.New("msgpack: declared length too large")
	// ErrMsgpackTooDeep: containers nest deeper than MsgpackLimits.MaxDepth.
	ErrMsgpackTooDeep = errors.New("msgpack: nesting too deep")
	// ErrMsgpackType: the value at the cursor is not of the requested type.
	ErrMsgpackType = errors.New("msgpack: unexpected type")
	// ErrMsgpackRange: an integer does not fit the requested Go type.
	ErrMsgpackRange = errors.New("msgpack: number out of range")
	// ErrMsgpackInvalid: the never-used format byte 0xc1, or bytes after
	// the one value CheckMsgpack expects.
	ErrMsgpackInvalid = errors.New("msgpack: invalid input")
)

// ErrInvalidUTF8 is wrapped by the errors of every decoder that meets text
// that is not valid UTF-8: a JSON document, or a msgpack str (bin is for
// bytes). Such text is refused where it enters, never stored
// (TP-VAL002).
var ErrInvalidUTF8 = errors.New("not valid UTF-8")

// Default limits of the msgpack reader; see [MsgpackLimits].
const (
	MsgpackDefaultMaxDepth = 32
	MsgpackDefaultMaxLen   = 1 << 20
)

// MsgpackLimits bounds what a [MsgpackReader] accepts from untrusted input.
// A zero field means its default.
//
// A string, binary or extension payload is never limited by anything but
// the bytes that remain: its bytes are returned as a view into the input,
// so nothing is allocated for them.
type MsgpackLimits struct {
	// MaxDepth is the deepest nesting of containers that Skip and
	// CheckMsgpack accept: 1 allows [1,2] but not [[1]]. Default 32.
	MaxDepth int
	// MaxLen is the largest element count (entry count for maps) a
	// container header may declare. Default 1<<20.
	MaxLen int
}

// DefaultMsgpackLimits are the limits used for untrusted input when the
// caller has no better ones: depth 32, 1<<20 elements per container.
var DefaultMsgpackLimits = MsgpackLimits{
	MaxDepth: MsgpackDefaultMaxDepth,
	MaxLen:   MsgpackDefaultMaxLen,
}

func (l MsgpackLimits) withDefaults() MsgpackLimits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = MsgpackDefaultMaxDepth
	}
	if l.MaxLen <= 0 {
		l.MaxLen = MsgpackDefaultMaxLen
	}
	return l
}

// MsgpackKind is the family of a msgpack format.
type MsgpackKind uint8

// Kinds reported by [MsgpackReader.PeekKind]. MsgpackUint covers the
// unsigned formats (positive fixint, uint 8–64), MsgpackInt the signed ones
// (negative fixint, int 8–64); ReadInt and ReadUint accept both.
const (
	MsgpackInvalid MsgpackKind = iota // end of input, or the byte 0xc1
	MsgpackNil
	MsgpackBool
	MsgpackInt
	MsgpackUint
	MsgpackFloat
	MsgpackStr
	MsgpackBin
	MsgpackArray
	MsgpackMap
	MsgpackExt
)

var mpKindNames = [...]string{
	MsgpackInvalid: "invalid",
	MsgpackNil:     "nil",
	MsgpackBool:    "bool",
	MsgpackInt:     "int",
	MsgpackUint:    "uint",
	MsgpackFloat:   "float",
	MsgpackStr:     "str",
	MsgpackBin:     "bin",
	MsgpackArray:   "array",
	MsgpackMap:     "map",
	MsgpackExt:     "ext",
}

// String returns the lower-case name of the kind ("uint", "str", ...).
func (k MsgpackKind) String() string {
	if int(k) < len(mpKindNames) {
		return mpKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// mpKind classifies a format byte.
func mpKind(c byte) MsgpackKind {
	switch {
	case c <= 0x7f:
		return MsgpackUint
	case c <= 0x8f:
		return MsgpackMap
	case c <= 0x9f:
		return MsgpackArray
	case c <= 0xbf:
		return MsgpackStr
	case c >= 0xe0:
		return MsgpackInt
	}
	switch c {
	case 0xc0:
		return MsgpackNil
	case 0xc2, 0xc3:
		return MsgpackBool
	case 0xc4, 0xc5, 0xc6:
		return MsgpackBin
	case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return MsgpackExt
	case 0xca, 0xcb:
		return MsgpackFloat
	case 0xcc, 0xcd, 0xce, 0xcf:
		return MsgpackUint
	case 0xd0, 0xd1, 0xd2, 0xd3:
		return MsgpackInt
	case 0xd9, 0xda, 0xdb:
		return MsgpackStr
	case 0xdc, 0xdd:
		return MsgpackArray
	case 0xde, 0xdf:
		return MsgpackMap
	}
	return MsgpackInvalid // 0xc1
}

// MsgpackTypeError reports a value of the wrong type. It matches
// ErrMsgpackType with errors.Is.
type MsgpackTypeError struct {
	Want   string      // what the caller asked for, e.g. "uint"
	Got    MsgpackKind // what the input holds
	Offset int         // byte offset of the value in the input
}

func (e *MsgpackTypeError) Error() string {
	return "msgpack: expected " + e.Want + ", found " + e.Got.String() +
		" at offset " + strconv.Itoa(e.Offset)
}

// Is makes errors.Is(err, ErrMsgpackType) true.
func (e *MsgpackTypeError) Is(target error) bool { return target == ErrMsgpackType }

// MsgpackReader reads msgpack values from a byte slice that may come from
// anyone. It never allocates on the read path: strings and binaries are
// returned as views into the input (the caller copies what it keeps), and
// lengths are checked against the remaining input and the limits before the
// caller can allocate for them.
//
// Every read either consumes one whole value (or one container header) and
// returns it, or returns an error and leaves the position unchanged.
// Container headers are only counted: after ReadArrayHeader returns n the
// caller reads n values (2n for a map: key, value, key, ...).
//
// A MsgpackReader is a small value; it can live on the stack and be reused
// with Reset. It is not safe for concurrent use.
type MsgpackReader struct {
	b   []byte
	off int
	lim MsgpackLimits
}

// NewMsgpackReader returns a reader positioned at the start of b.
func NewMsgpackReader(b []byte, lim MsgpackLimits) *MsgpackReader {
	r := new(MsgpackReader)
	r.Reset(b, lim)
	return r
}

// Reset makes r read b from its start with the given limits.
func (r *MsgpackReader) Reset(b []byte, lim MsgpackLimits) {
	r.b, r.off, r.lim = b, 0, lim.withDefaults()
}

// Remaining returns the number of unread bytes.
func (r *MsgpackReader) Remaining() int { return len(r.b) - r.off }

// Offset returns the position of the next value in the input.
func (r *MsgpackReader) Offset() int { return r.off }

// PeekKind returns the kind of the next value without consuming it;
// MsgpackInvalid at the end of input or on the byte 0xc1.
func (r *MsgpackReader) PeekKind() MsgpackKind {
	if r.off >= len(r.b) {
		return MsgpackInvalid
	}
	return mpKind(r.b[r.off])
}

// IsNil reports whether the next value is nil, without consuming it.
func (r *MsgpackReader) IsNil() bool {
	return r.off < len(r.b) && r.b[r.off] == 0xc0
}

// ReadNil consumes the next value and returns true if it is nil; otherwise
// it consumes nothing and returns false.
func (r *MsgpackReader) ReadNil() bool {
	if r.IsNil() {
		r.off++
		return true
	}
	return false
}

// ReadBool reads a bool.
func (r *MsgpackReader) ReadBool() (bool, error) {
	if r.off >= len(r.b) {
		return false, r.truncated(1)
	}
	switch r.b[r.off] {
	case 0xc2:
		r.off++
		return false, nil
	case 0xc3:
		r.off++
		return true, nil
	}
	return false, r.typeError("bool")
}

// ReadInt reads an integer of any format whose value fits an int64.
func (r *MsgpackReader) ReadInt() (int64, error) {
	start := r.off
	v, signed, err := r.readInteger("int")
	if err != nil {
		return 0, err
	}
	if !signed && v > math.MaxInt64 {
		r.off = start
		return 0, r.rangeError(strconv.FormatUint(v, 10), "int")
	}
	return int64(v), nil
}

// ReadUint reads an integer of any format whose value is not negative.
func (r *MsgpackReader) ReadUint() (uint64, error) {
	start := r.off
	v, signed, err := r.readInteger("uint")
	if err != nil {
		return 0, err
	}
	if signed && int64(v) < 0 {
		r.off = start
		return 0, r.rangeError(strconv.FormatInt(int64(v), 10), "uint")
	}
	return v, nil
}

// ReadFloat reads a float32 or float64, or an integer of any format
// (converted, rounding to the nearest float64 beyond 2^53).
func (r *MsgpackReader) ReadFloat() (float64, error) {
	if r.off >= len(r.b) {
		return 0, r.truncated(1)
	}
	switch r.b[r.off] {
	case 0xca:
		if len(r.b)-r.off < 5 {
			return 0, r.truncated(5)
		}
		f := math.Float32frombits(binary.BigEndian.Uint32(r.b[r.off+1:]))
		r.off += 5
		return float64(f), nil
	case 0xcb:
		if len(r.b)-r.off < 9 {
			return 0, r.truncated(9)
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(r.b[r.off+1:]))
		r.off += 9
		return f, nil
	}
	v, signed, err := r.readInteger("float")
	if err != nil {
		return 0, err
	}
	if signed {
		return float64(int64(v)), nil
	}
	return float64(v), nil
}

// readInteger reads any integer format. For the signed formats it reports
// signed and returns the two's-complement bits of the value. On error the
// position is unchanged; on success r.off is past the value.
func (r *MsgpackReader) readInteger(want string) (v uint64, signed bool, err error) {
	if r.off >= len(r.b) {
		return 0, false, r.truncated(1)
	}
	c := r.b[r.off]
	if c <= 0x7f {
		r.off++
		return uint64(c), false, nil
	}
	if c >= 0xe0 {
		r.off++
		return uint64(int64(int8(c))), true, nil
	}
	var n int
	switch c {
	case 0xcc, 0xd0:
		n = 1
	case 0xcd, 0xd1:
		n = 2
	case 0xce, 0xd2:
		n = 4
	case 0xcf, 0xd3:
		n = 8
	default:
		return 0, false, r.typeError(want)
	}
	if len(r.b)-r.off-1 < n {
		return 0, false, r.truncated(1 + n)
	}
	p := r.b[r.off+1 : r.off+1+n]
	switch c {
	case 0xcc:
		v = uint64(p[0])
	case 0xcd:
		v = uint64(binary.BigEndian.Uint16(p))
	case 0xce:
		v = uint64(binary.BigEndian.Uint32(p))
	case 0xcf:
		v = binary.BigEndian.Uint64(p)
	case 0xd0:
		v, signed = uint64(int64(int8(p[0]))), true
	case 0xd1:
		v, signed = uint64(int64(int16(binary.BigEndian.Uint16(p)))), true
	case 0xd2:
		v, signed = uint64(int64(int32(binary.BigEndian.Uint32(p)))), true
	case 0xd3:
		v, signed = binary.BigEndian.Uint64(p), true
	}
	r.off += 1 + n
	return v, signed, nil
}

// ReadString reads a str and returns a copy of it (one allocation).
func (r *MsgpackReader) ReadString() (string, error) {
	b, err := r.ReadStringBytes()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// ReadStringBytes reads a str and returns its bytes as a view into the
// input, without copying. The bytes are not checked for valid UTF-8.
func (r *MsgpackReader) ReadStringBytes() ([]byte, error) {
	if r.off < len(r.b) {
		if c := r.b[r.off]; c&0xe0 == 0xa0 { // fixstr fast path
			n := int(c & 0x1f)
			if len(r.b)-r.off-1 >= n {
				s := r.b[r.off+1 : r.off+1+n : r.off+1+n]
				r.off += 1 + n
				return s, nil
			}
		}
	}
	return r.readBlob(MsgpackStr, "str")
}

// ReadBytes reads a bin and returns its bytes as a view into the input,
// without copying.
func (r *MsgpackReader) ReadBytes() ([]byte, error) {
	return r.readBlob(MsgpackBin, "bin")
}

// ReadExt reads an extension value and returns its type and its data as a
// view into the input.
func (r *MsgpackReader) ReadExt() (typ int8, data []byte, err error) {
	if r.off >= len(r.b) {
		return 0, nil, r.truncated(1)
	}
	var hdr, n int
	switch c := r.b[r.off]; c {
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16
		hdr, n = 1, 1<<(c-0xd4)
	case 0xc7, 0xc8, 0xc9:
		w := 1 << (c - 0xc7) // width of the length: 1, 2 or 4
		if len(r.b)-r.off-1 < w {
			return 0, nil, r.truncated(1 + w)
		}
		hdr = 1 + w
		ln := mpLen(r.b[r.off+1:], w)
		if ln > uint64(len(r.b)-r.off) {
			return 0, nil, r.truncatedPayload("ext", ln, hdr+1)
		}
		n = int(ln)
	default:
		return 0, nil, r.typeError("ext")
	}
	// The type byte follows the header, then n bytes of data.
	if len(r.b)-r.off-hdr-1 < n {
		return 0, nil, r.truncatedPayload("ext", uint64(n), hdr+1)
	}
	typ = int8(r.b[r.off+hdr])
	start := r.off + hdr + 1
	r.off = start + n
	return typ, r.b[start:r.off:r.off], nil
}

// readBlob reads a str or bin (kind says which) whose payload is not
// longer than the remaining input.
func (r *MsgpackReader) readBlob(kind MsgpackKind, want string) ([]byte, error) {
	if r.off >= len(r.b) {
		return nil, r.truncated(1)
	}
	c := r.b[r.off]
	var w int // width of the length field
	switch {
	case kind == MsgpackStr && c&0xe0 == 0xa0:
		w = 0
	case kind == MsgpackStr && c >= 0xd9 && c <= 0xdb:
		w = 1 << (c - 0xd9)
	case kind == MsgpackBin && c >= 0xc4 && c <= 0xc6:
		w = 1 << (c - 0xc4)
	default:
		return nil, r.typeError(want)
	}
	if len(r.b)-r.off-1 < w {
		return nil, r.truncated(1 + w)
	}
	ln := uint64(c & 0x1f)
	if w > 0 {
		ln = mpLen(r.b[r.off+1:], w)
	}
	if uint64(len(r.b)-r.off-1-w) < ln {
		return nil, r.truncatedPayload(want, ln, 1+w)
	}
	start := r.off + 1 + w
	end := start + int(ln)
	if kind == MsgpackStr && !utf8.Valid(r.b[start:end]) {
		return nil, fmt.Errorf("%w: msgpack str at offset %d", ErrInvalidUTF8, r.off)
	}
	r.off = end
	return r.b[start:end:end], nil
}

// mpLen decodes a big-endian length of width w (1, 2 or 4) from p.
func mpLen(p []byte, w int) uint64 {
	switch w {
	case 1:
		return uint64(p[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(p))
	}
	return uint64(binary.BigEndian.Uint32(p))
}

// ReadArrayHeader reads an array header and returns its element count,
// which is at most the remaining bytes and at most MaxLen.
func (r *MsgpackReader) ReadArrayHeader() (int, error) {
	if r.off < len(r.b) {
		if c := r.b[r.off]; c&0xf0 == 0x90 { // fixarray fast path
			n := int(c & 0x0f)
			if n <= len(r.b)-r.off-1 && n <= r.lim.MaxLen {
				r.off++
				return n, nil
			}
		}
	}
	return r.readContainer(MsgpackArray)
}

// ReadMapHeader reads a map header and returns its entry count; the
// remaining input holds at least two bytes per entry and the count is at
// most MaxLen.
func (r *MsgpackReader) ReadMapHeader() (int, error) {
	return r.readContainer(MsgpackMap)
}

func (r *MsgpackReader) readContainer(kind MsgpackKind) (int, error) {
	if r.off >= len(r.b) {
		return 0, r.truncated(1)
	}
	c := r.b[r.off]
	var fix, w16 byte = 0x90, 0xdc
	if kind == MsgpackMap {
		fix, w16 = 0x80, 0xde
	}
	var w int
	var n uint64
	switch {
	case c&0xf0 == fix:
		n = uint64(c & 0x0f)
	case c == w16:
		w = 2
	case c == w16+1:
		w = 4
	default:
		return 0, r.typeError(kind.String())
	}
	if w > 0 {
		if len(r.b)-r.off-1 < w {
			return 0, r.truncated(1 + w)
		}
		n = mpLen(r.b[r.off+1:], w)
	}
	// Every element takes at least one byte, every map entry two.
	least := n
	if kind == MsgpackMap {
		least = 2 * n
	}
	left := uint64(len(r.b) - r.off - 1 - w)
	if least > left {
		return 0, fmt.Errorf("%w: %s at offset %d declares %d elements, %d bytes remain",
			ErrMsgpackTruncated, kind, r.off, n, left)
	}
	if n > uint64(r.lim.MaxLen) {
		return 0, fmt.Errorf("%w: %s at offset %d declares %d elements, limit %d",
			ErrMsgpackTooLarge, kind, r.off, n, r.lim.MaxLen)
	}
	r.off += 1 + w
	return int(n), nil
}

// Skip consumes one whole value, containers included, without recursion.
// It applies MaxDepth to the containers it enters.
func (r *MsgpackReader) Skip() error {
	return r.walk(false)
}

// CheckMsgpack reports whether b holds exactly one msgpack value within
// lim, walking it without allocating (for nesting up to 16 levels). It is
// the guard in front of the msgpack library for untrusted bytes, so it is
// stricter than Skip where the library would fail or could be misled:
//
//   - map keys must be strings (str), as in every Synapse document;
//   - the only extension accepted is the msgpack timestamp (type -1 with
//     4, 8 or 12 bytes of data);
//   - no bytes may follow the value.
func CheckMsgpack(b []byte, lim MsgpackLimits) error {
	var r MsgpackReader
	r.Reset(b, lim)
	if err := r.walk(true); err != nil {
		return err
	}
	if r.off != len(b) {
		return fmt.Errorf("%w: %d bytes after the value at offset %d",
			ErrMsgpackInvalid, len(b)-r.off, r.off)
	}
	return nil
}

// mpOpen is one container being walked: the values still to read in it,
// keys and values counted separately for maps.
type mpOpen struct {
	left  int
	isMap bool
}

// walk consumes one value. strict applies the CheckMsgpack rules.
func (r *MsgpackReader) walk(strict bool) error {
	start := r.off
	var buf [16]mpOpen
	stack := buf[:0]
	for {
		if strict && len(stack) > 0 {
			if top := stack[len(stack)-1]; top.isMap && top.left%2 == 0 {
				if r.PeekKind() != MsgpackStr {
					err := r.keyError()
					r.off = start
					return err
				}
			}
		}
		kind, n, err := r.skipHead(strict)
		if err == nil && (kind == MsgpackArray || kind == MsgpackMap) && len(stack) >= r.lim.MaxDepth {
			err = fmt.Errorf("%w: more than %d levels at offset %d", ErrMsgpackTooDeep, r.lim.MaxDepth, r.off)
		}
		if err != nil {
			r.off = start
			return err
		}
		if n > 0 {
			stack = append(stack, mpOpen{left: n, isMap: kind == MsgpackMap})
			continue
		}
		// One value is complete: count it in the containers it closes.
		for {
			if len(stack) == 0 {
				return nil
			}
			top := &stack[len(stack)-1]
			if top.left--; top.left > 0 {
				break
			}
			stack = stack[:len(stack)-1]
		}
	}
}

func (r *MsgpackReader) keyError() error {
	if r.off >= len(r.b) {
		return r.truncated(1)
	}
	return r.typeError("str map key")
}

// skipHead consumes a scalar whole, or a container header; for a container
// it returns the number of values that follow (2 per map entry). On error
// the position is unchanged.
func (r *MsgpackReader) skipHead(strict bool) (MsgpackKind, int, error) {
	if r.off >= len(r.b) {
		return MsgpackInvalid, 0, r.truncated(1)
	}
	c := r.b[r.off]
	kind := mpKind(c)
	var err error
	switch kind {
	case MsgpackNil:
		r.off++
	case MsgpackBool:
		_, err = r.ReadBool()
	case MsgpackInt, MsgpackUint:
		_, _, err = r.readInteger("int")
	case MsgpackFloat:
		_, err = r.ReadFloat()
	case MsgpackStr:
		_, err = r.readBlob(MsgpackStr, "str")
	case MsgpackBin:
		_, err = r.readBlob(MsgpackBin, "bin")
	case MsgpackExt:
		at := r.off
		var typ int8
		var data []byte
		typ, data, err = r.ReadExt()
		if err == nil && strict && (typ != -1 || (len(data) != 4 && len(data) != 8 && len(data) != 12)) {
			r.off = at
			err = fmt.Errorf("%w: expected timestamp ext, found ext type %d with %d bytes at offset %d",
				ErrMsgpackType, typ, len(data), at)
		}
	case MsgpackArray:
		var n int
		n, err = r.readContainer(MsgpackArray)
		return kind, n, err
	case MsgpackMap:
		var n int
		n, err = r.readContainer(MsgpackMap)
		return kind, 2 * n, err
	default:
		err = fmt.Errorf("%w: format byte 0x%02x at offset %d", ErrMsgpackInvalid, c, r.off)
	}
	return kind, 0, err
}

func (r *MsgpackReader) typeError(want string) error {
	return &MsgpackTypeError{Want: want, Got: r.PeekKind(), Offset: r.off}
}

// rangeError reports a number at the cursor that does not fit want.
func (r *MsgpackReader) rangeError(val, want string) error {
	return fmt.Errorf("%w: %s does not fit %s at offset %d", ErrMsgpackRange, val, want, r.off)
}

func (r *MsgpackReader) truncated(need int) error {
	return fmt.Errorf("%w: %d bytes needed at offset %d, %d remain",
		ErrMsgpackTruncated, need, r.off, len(r.b)-r.off)
}

func (r *MsgpackReader) truncatedPayload(what string, n uint64, hdr int) error {
	return fmt.Errorf("%w: %s at offset %d declares %d bytes, %d remain",
		ErrMsgpackTruncated, what, r.off, n, max(len(r.b)-r.off-hdr, 0))
}
