package tier1

import (
	"encoding/hex"
	"math"
	"strconv"
)

// Kind is the type of a [Value]; it matches the [FieldType] of its field.
type Kind uint8

// Value kinds. KindNull is an absent optional field.
const (
	KindNull Kind = iota
	KindStr
	KindInt
	KindUint
	KindFloat
	KindBool
	KindBin
)

var kindNames = [...]string{"null", "str", "int", "uint", "float", "bool", "bin"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one field value of a frame: a small tagged union of 32 bytes that
// holds numbers inline and text or bytes in an immutable string. The zero
// Value is null.
type Value struct {
	kind Kind
	n    uint64 // int64 bits, uint64, float64 bits, or 1 for true
	s    string // str, or the bytes of a bin
}

// Null returns the null value (an absent optional field).
func Null() Value { return Value{} }

// Str returns a str value.
func Str(s string) Value { return Value{kind: KindStr, s: s} }

// Int returns an int value.
func Int(i int64) Value { return Value{kind: KindInt, n: uint64(i)} }

// Uint returns a uint value.
func Uint(u uint64) Value { return Value{kind: KindUint, n: u} }

// Float returns a float value.
func Float(f float64) Value { return Value{kind: KindFloat, n: math.Float64bits(f)} }

// Bool returns a bool value.
func Bool(b bool) Value {
	v := Value{kind: KindBool}
	if b {
		v.n = 1
	}
	return v
}

// Bin returns a bin value holding a copy of b.
func Bin(b []byte) Value { return Value{kind: KindBin, s: string(b)} }

// Kind returns the kind of v.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is null.
func (v Value) IsNull() bool { return v.kind == KindNull }

// Int returns the value of an int (0 for other kinds).
func (v Value) Int() int64 {
	if v.kind != KindInt {
		return 0
	}
	return int64(v.n)
}

// Uint returns the value of a uint (0 for other kinds).
func (v Value) Uint() uint64 {
	if v.kind != KindUint {
		return 0
	}
	return v.n
}

// Float returns the value of a float (0 for other kinds).
func (v Value) Float() float64 {
	if v.kind != KindFloat {
		return 0
	}
	return math.Float64frombits(v.n)
}

// Bool returns the value of a bool (false for other kinds).
func (v Value) Bool() bool { return v.kind == KindBool && v.n == 1 }

// Str returns the text of a str, or the bytes of a bin as a string ("" for
// other kinds). It does not allocate.
func (v Value) Str() string {
	if v.kind != KindStr && v.kind != KindBin {
		return ""
	}
	return v.s
}

// Bytes returns a copy of the bytes of a bin or str (nil for other kinds).
func (v Value) Bytes() []byte {
	if v.kind != KindStr && v.kind != KindBin {
		return nil
	}
	return []byte(v.s)
}

// Equal reports whether v and w have the same kind and value; floats are
// compared bit for bit, so NaN equals the same NaN and 0 differs from -0.
func (v Value) Equal(w Value) bool { return v == w }

// String formats v for people: strings quoted, bins in hex.
func (v Value) String() string {
	switch v.kind {
	case KindStr:
		return strconv.Quote(v.s)
	case KindInt:
		return strconv.FormatInt(int64(v.n), 10)
	case KindUint:
		return strconv.FormatUint(v.n, 10)
	case KindFloat:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case KindBool:
		return strconv.FormatBool(v.Bool())
	case KindBin:
		return "0x" + hex.EncodeToString([]byte(v.s))
	}
	return "null"
}

// Frame is one record of a routine: its field values in descriptor order.
// A frame may be shorter than the descriptor when its trailing optional
// fields are absent; [Frame.At] reads those as null. Decoded frames never
// end in a null value.
type Frame []Value

// At returns the value of field i, null when the frame is shorter.
func (f Frame) At(i int) Value {
	if i < 0 || i >= len(f) {
		return Value{}
	}
	return f[i]
}

// Equal reports whether f and g hold equal values, treating absent
// trailing values as null.
func (f Frame) Equal(g Frame) bool {
	for i := range max(len(f), len(g)) {
		if f.At(i) != g.At(i) {
			return false
		}
	}
	return true
}
