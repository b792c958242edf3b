package tier1

import (
	"encoding/binary"
	"math"
)

// AppendBatch appends a batch [capID, version, [frame, ...], batchID] in
// the smallest encodings (see the package documentation); batchID is left
// out when empty. When d is not nil, numbers are written in the family of
// their field: an Int or Uint value of a float field as a float, a
// non-negative Int of a uint field and a Uint up to MaxInt64 of an int
// field in the other integer family, a Bin of a str field as str and a
// Str of a bin field as bin. Other values are written as they are, so a
// mismatched frame yields a batch that the decoder refuses.
func AppendBatch(dst []byte, capID, version, batchID string, frames []Frame, d *Descriptor) []byte {
	n := 3
	if batchID != "" {
		n = 4
	}
	dst = appendArrayHeader(dst, n)
	dst = appendStr(dst, capID)
	dst = appendStr(dst, version)
	dst = appendArrayHeader(dst, len(frames))
	for _, f := range frames {
		if d == nil {
			dst = AppendFrame(dst, f)
			continue
		}
		dst = appendArrayHeader(dst, len(f))
		for i, v := range f {
			if i < len(d.Fields) {
				v = v.as(d.Fields[i].Type.kind())
			}
			dst = v.appendMsgpack(dst)
		}
	}
	if batchID != "" {
		dst = appendStr(dst, batchID)
	}
	return dst
}

// AppendFrame appends f as a msgpack array of its values, each in its
// smallest encoding; [DecodeFrame] reads it back.
func AppendFrame(dst []byte, f Frame) []byte {
	dst = appendArrayHeader(dst, len(f))
	for _, v := range f {
		dst = v.appendMsgpack(dst)
	}
	return dst
}

// as converts v to kind k where that is a change of encoding only (or, for
// integers to float, the rounding the decoder would apply).
func (v Value) as(k Kind) Value {
	switch {
	case v.kind == k:
	case k == KindFloat && v.kind == KindInt:
		return Float(float64(int64(v.n)))
	case k == KindFloat && v.kind == KindUint:
		return Float(float64(v.n))
	case k == KindInt && v.kind == KindUint && v.n <= math.MaxInt64,
		k == KindUint && v.kind == KindInt && int64(v.n) >= 0,
		k == KindStr && v.kind == KindBin,
		k == KindBin && v.kind == KindStr:
		v.kind = k
	}
	return v
}

func (v Value) appendMsgpack(dst []byte) []byte {
	switch v.kind {
	case KindStr:
		return appendStr(dst, v.s)
	case KindInt:
		return appendInt(dst, int64(v.n))
	case KindUint:
		return appendUint(dst, v.n)
	case KindFloat:
		return appendFloat(dst, math.Float64frombits(v.n))
	case KindBool:
		if v.n == 1 {
			return append(dst, 0xc3)
		}
		return append(dst, 0xc2)
	case KindBin:
		return appendBin(dst, v.s)
	}
	return append(dst, 0xc0)
}

func appendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, 0x90|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdd), uint32(n))
}

func appendStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n <= 31:
		dst = append(dst, 0xa0|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

func appendBin(dst []byte, s string) []byte {
	switch n := len(s); {
	case n <= math.MaxUint8:
		dst = append(dst, 0xc4, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xc5), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xc6), uint32(n))
	}
	return append(dst, s...)
}

func appendUint(dst []byte, u uint64) []byte {
	switch {
	case u <= 0x7f:
		return append(dst, byte(u))
	case u <= math.MaxUint8:
		return append(dst, 0xcc, byte(u))
	case u <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(u))
	case u <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(u))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), u)
}

// appendInt writes non-negative values in the unsigned formats, as msgpack
// encoders conventionally do.
func appendInt(dst []byte, i int64) []byte {
	switch {
	case i >= 0:
		return appendUint(dst, uint64(i))
	case i >= -32:
		return append(dst, byte(i))
	case i >= math.MinInt8:
		return append(dst, 0xd0, byte(i))
	case i >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(i))
	case i >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(i))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(i))
}

// appendFloat writes a float32 when that holds f exactly (bit for bit after
// widening), else a float64.
func appendFloat(dst []byte, f float64) []byte {
	if f32 := float32(f); math.Float64bits(float64(f32)) == math.Float64bits(f) {
		return binary.BigEndian.AppendUint32(append(dst, 0xca), math.Float32bits(f32))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(f))
}
