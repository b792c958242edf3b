package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/synapse-edge/synapse/wire"
)

// mpHex decodes a hex string with optional spaces.
func mpHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func mpReader(t testing.TB, s string) *wire.MsgpackReader {
	t.Helper()
	return wire.NewMsgpackReader(mpHex(t, s), wire.DefaultMsgpackLimits)
}

// mpDone checks that a read consumed the whole input.
func mpDone(t *testing.T, r *wire.MsgpackReader) {
	t.Helper()
	if got := r.Remaining(); got != 0 {
		t.Errorf("Remaining() = %d after the value, want 0", got)
	}
}

func TestMsgpackReadInt(t *testing.T) {
	tests := []struct {
		name, hex string
		want      int64
		kind      wire.MsgpackKind
	}{
		{"positive fixint 0", "00", 0, wire.MsgpackUint},
		{"positive fixint 127", "7f", 127, wire.MsgpackUint},
		{"negative fixint -1", "ff", -1, wire.MsgpackInt},
		{"negative fixint -32", "e0", -32, wire.MsgpackInt},
		{"uint8", "cc ff", 255, wire.MsgpackUint},
		{"uint16", "cd 01 00", 256, wire.MsgpackUint},
		{"uint32", "ce 00 01 00 00", 65536, wire.MsgpackUint},
		{"uint64 max int64", "cf 7f ff ff ff ff ff ff ff", math.MaxInt64, wire.MsgpackUint},
		{"int8", "d0 80", -128, wire.MsgpackInt},
		{"int8 positive", "d0 05", 5, wire.MsgpackInt},
		{"int16", "d1 80 00", math.MinInt16, wire.MsgpackInt},
		{"int32", "d2 80 00 00 00", math.MinInt32, wire.MsgpackInt},
		{"int64", "d3 80 00 00 00 00 00 00 00", math.MinInt64, wire.MsgpackInt},
		{"int64 unix ns", "d3 17 97 9c fe 36 2a 00 00", 1700000000000000000, wire.MsgpackInt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			if got := r.PeekKind(); got != tt.kind {
				t.Errorf("PeekKind() = %v, want %v", got, tt.kind)
			}
			got, err := r.ReadInt()
			if err != nil {
				t.Fatalf("ReadInt: %v", err)
			}
			if got != tt.want {
				t.Errorf("ReadInt() = %d, want %d", got, tt.want)
			}
			mpDone(t, r)
		})
	}
}

func TestMsgpackReadUint(t *testing.T) {
	tests := []struct {
		name, hex string
		want      uint64
	}{
		{"positive fixint", "2a", 42},
		{"uint8", "cc 80", 128},
		{"uint16", "cd ff ff", 65535},
		{"uint32", "ce ff ff ff ff", math.MaxUint32},
		{"uint64 max", "cf ff ff ff ff ff ff ff ff", math.MaxUint64},
		{"int8 non-negative", "d0 7f", 127},
		{"int16 non-negative", "d1 00 01", 1},
		{"int32 non-negative", "d2 7f ff ff ff", math.MaxInt32},
		{"int64 non-negative", "d3 00 00 00 00 00 00 00 00", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			got, err := r.ReadUint()
			if err != nil {
				t.Fatalf("ReadUint: %v", err)
			}
			if got != tt.want {
				t.Errorf("ReadUint() = %d, want %d", got, tt.want)
			}
			mpDone(t, r)
		})
	}
}

func TestMsgpackReadFloat(t *testing.T) {
	tests := []struct {
		name, hex string
		want      float64
	}{
		{"float32", "ca 3f c0 00 00", 1.5},
		{"float32 negative", "ca c1 a4 00 00", -20.5},
		{"float64", "cb 3f f8 00 00 00 00 00 00", 1.5},
		{"float64 pi", "cb 40 09 21 fb 54 44 2d 18", math.Pi},
		{"positive fixint", "14", 20},
		{"negative fixint", "ec", -20},
		{"uint16", "cd 01 00", 256},
		{"int64", "d3 ff ff ff ff ff ff ff 00", -256},
		{"uint64 max", "cf ff ff ff ff ff ff ff ff", math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			if got, want := r.PeekKind() == wire.MsgpackFloat, strings.HasPrefix(tt.name, "float"); got != want {
				t.Errorf("PeekKind() = %v", r.PeekKind())
			}
			got, err := r.ReadFloat()
			if err != nil {
				t.Fatalf("ReadFloat: %v", err)
			}
			if got != tt.want {
				t.Errorf("ReadFloat() = %v, want %v", got, tt.want)
			}
			mpDone(t, r)
		})
	}
}

func TestMsgpackReadStringAndBytes(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name, hex string
		want      string
		bin       bool
	}{
		{"fixstr empty", "a0", "", false},
		{"fixstr", "a3 61 62 63", "abc", false},
		{"fixstr 31", "bf" + hex.EncodeToString([]byte(long[:31])), long[:31], false},
		{"str8", "d9 03 61 62 63", "abc", false},
		{"str16", "da 01 2c" + hex.EncodeToString([]byte(long)), long, false},
		{"str32", "db 00 00 00 03 61 62 63", "abc", false},
		{"bin8", "c4 03 01 02 03", "\x01\x02\x03", true},
		{"bin16", "c5 00 02 ff 00", "\xff\x00", true},
		{"bin32", "c6 00 00 00 01 7f", "\x7f", true},
		{"bin8 empty", "c4 00", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			wantKind := wire.MsgpackStr
			read := r.ReadStringBytes
			if tt.bin {
				wantKind, read = wire.MsgpackBin, r.ReadBytes
			}
			if got := r.PeekKind(); got != wantKind {
				t.Errorf("PeekKind() = %v, want %v", got, wantKind)
			}
			got, err := read()
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			mpDone(t, r)
			if !tt.bin {
				s, err := mpReader(t, tt.hex).ReadString()
				if err != nil || s != tt.want {
					t.Errorf("ReadString() = %q, %v; want %q", s, err, tt.want)
				}
			}
		})
	}
}

func TestMsgpackReadBytesIsAView(t *testing.T) {
	in := mpHex(t, "c4 02 01 02")
	r := wire.NewMsgpackReader(in, wire.MsgpackLimits{})
	got, err := r.ReadBytes()
	if err != nil {
		t.Fatal(err)
	}
	in[2] = 9
	if got[0] != 9 {
		t.Errorf("ReadBytes returned a copy; want a view into the input")
	}
	if cap(got) != len(got) {
		t.Errorf("cap(view) = %d, want %d so appends cannot overwrite the input", cap(got), len(got))
	}
}

func TestMsgpackReadContainers(t *testing.T) {
	tests := []struct {
		name, hex string
		kind      wire.MsgpackKind
		want      int
	}{
		{"fixarray empty", "90", wire.MsgpackArray, 0},
		{"fixarray", "93 01 02 03", wire.MsgpackArray, 3},
		{"fixarray 15", "9f" + strings.Repeat("c0", 15), wire.MsgpackArray, 15},
		{"array16", "dc 00 03 01 02 03", wire.MsgpackArray, 3},
		{"array32", "dd 00 00 00 02 c2 c3", wire.MsgpackArray, 2},
		{"fixmap empty", "80", wire.MsgpackMap, 0},
		{"fixmap", "81 a1 61 01", wire.MsgpackMap, 1},
		{"map16", "de 00 01 a1 61 01", wire.MsgpackMap, 1},
		{"map32", "df 00 00 00 02 a1 61 01 a1 62 c0", wire.MsgpackMap, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			if got := r.PeekKind(); got != tt.kind {
				t.Errorf("PeekKind() = %v, want %v", got, tt.kind)
			}
			read := r.ReadArrayHeader
			if tt.kind == wire.MsgpackMap {
				read = r.ReadMapHeader
			}
			got, err := read()
			if err != nil {
				t.Fatalf("read header: %v", err)
			}
			if got != tt.want {
				t.Errorf("header = %d, want %d", got, tt.want)
			}
			values := got
			if tt.kind == wire.MsgpackMap {
				values *= 2
			}
			for i := range values {
				if err := r.Skip(); err != nil {
					t.Fatalf("Skip element %d: %v", i, err)
				}
			}
			mpDone(t, r)
		})
	}
}

func TestMsgpackReadNilBoolExt(t *testing.T) {
	t.Run("nil", func(t *testing.T) {
		r := mpReader(t, "c0 c3")
		if !r.IsNil() || r.PeekKind() != wire.MsgpackNil {
			t.Fatalf("IsNil() = false, PeekKind() = %v; want nil", r.PeekKind())
		}
		if !r.ReadNil() {
			t.Fatal("ReadNil() = false on nil")
		}
		if r.ReadNil() {
			t.Fatal("ReadNil() = true on a bool")
		}
		if got := r.Offset(); got != 1 {
			t.Errorf("Offset() = %d after failed ReadNil, want 1", got)
		}
	})
	t.Run("bool", func(t *testing.T) {
		r := mpReader(t, "c2 c3")
		for _, want := range []bool{false, true} {
			got, err := r.ReadBool()
			if err != nil || got != want {
				t.Errorf("ReadBool() = %v, %v; want %v", got, err, want)
			}
		}
		mpDone(t, r)
	})
	exts := []struct {
		name, hex string
		typ       int8
		data      string
	}{
		{"fixext1", "d4 05 01", 5, "01"},
		{"fixext2", "d5 05 01 02", 5, "0102"},
		{"fixext4 timestamp32", "d6 ff 00 00 00 01", -1, "00000001"},
		{"fixext8", "d7 01 01 02 03 04 05 06 07 08", 1, "0102030405060708"},
		{"fixext16", "d8 02" + strings.Repeat("ab", 16), 2, strings.Repeat("ab", 16)},
		{"ext8", "c7 03 07 01 02 03", 7, "010203"},
		{"ext8 empty", "c7 00 07", 7, ""},
		{"ext16", "c8 00 01 80 aa", -128, "aa"},
		{"ext32", "c9 00 00 00 02 7f aa bb", 127, "aabb"},
	}
	for _, tt := range exts {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			if got := r.PeekKind(); got != wire.MsgpackExt {
				t.Errorf("PeekKind() = %v, want ext", got)
			}
			typ, data, err := r.ReadExt()
			if err != nil {
				t.Fatalf("ReadExt: %v", err)
			}
			if typ != tt.typ || hex.EncodeToString(data) != tt.data {
				t.Errorf("ReadExt() = %d, %x; want %d, %s", typ, data, tt.typ, tt.data)
			}
			mpDone(t, r)
		})
	}
}

// TestMsgpackReaderReadsLibraryOutput cross-checks the reader against the
// encoder of the msgpack library for values at every format boundary.
func TestMsgpackReaderReadsLibraryOutput(t *testing.T) {
	ints := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	for _, v := range ints {
		for _, compact := range []bool{false, true} {
			var buf bytes.Buffer
			enc := msgpack.NewEncoder(&buf)
			enc.UseCompactInts(compact)
			if err := enc.EncodeInt(v); err != nil {
				t.Fatal(err)
			}
			r := wire.NewMsgpackReader(buf.Bytes(), wire.MsgpackLimits{})
			got, err := r.ReadInt()
			if err != nil || got != v {
				t.Errorf("ReadInt(%x) = %d, %v; want %d", buf.Bytes(), got, err, v)
			}
		}
	}
	for _, f := range []float64{0, -0.5, 1e300, math.Inf(-1), float64(float32(3.25))} {
		for _, f32 := range []bool{false, true} {
			var b []byte
			var err error
			if f32 {
				b, err = msgpack.Marshal(float32(f))
			} else {
				b, err = msgpack.Marshal(f)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.NewMsgpackReader(b, wire.MsgpackLimits{}).ReadFloat()
			if want := float64(float32(f)); err != nil || (f32 && got != want) || (!f32 && got != f) {
				t.Errorf("ReadFloat(%x) = %v, %v", b, got, err)
			}
		}
	}
	for _, n := range []int{0, 31, 32, 255, 256, 65535, 65536} {
		s := strings.Repeat("s", n)
		b, _ := msgpack.Marshal(s)
		got, err := wire.NewMsgpackReader(b, wire.MsgpackLimits{}).ReadString()
		if err != nil || got != s {
			t.Errorf("ReadString(len %d) = len %d, %v", n, len(got), err)
		}
		b, _ = msgpack.Marshal([]byte(s))
		bin, err := wire.NewMsgpackReader(b, wire.MsgpackLimits{}).ReadBytes()
		if err != nil || string(bin) != s {
			t.Errorf("ReadBytes(len %d) = len %d, %v", n, len(bin), err)
		}
		arr := make([]int, n)
		b, _ = msgpack.Marshal(arr)
		if got, err := wire.NewMsgpackReader(b, wire.MsgpackLimits{}).ReadArrayHeader(); err != nil || got != n {
			t.Errorf("ReadArrayHeader(len %d) = %d, %v", n, got, err)
		}
		if err := wire.CheckMsgpack(b, wire.MsgpackLimits{}); err != nil {
			t.Errorf("CheckMsgpack(array of %d) = %v", n, err)
		}
	}
}

func TestMsgpackTypeErrors(t *testing.T) {
	r := mpReader(t, "92 01 a1 61")
	if _, err := r.ReadArrayHeader(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadUint(); err != nil {
		t.Fatal(err)
	}
	_, err := r.ReadUint()
	if got, want := err.Error(), "msgpack: expected uint, found str at offset 2"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	if !errors.Is(err, wire.ErrMsgpackType) {
		t.Errorf("errors.Is(%v, ErrMsgpackType) = false", err)
	}
	var te *wire.MsgpackTypeError
	if !errors.As(err, &te) || te.Want != "uint" || te.Got != wire.MsgpackStr || te.Offset != 2 {
		t.Errorf("errors.As = %+v", te)
	}
	if got := r.Offset(); got != 2 {
		t.Errorf("Offset() after an error = %d, want 2 (unchanged)", got)
	}
	if s, err := r.ReadString(); err != nil || s != "a" {
		t.Errorf("ReadString after the error = %q, %v", s, err)
	}

	mismatches := []struct {
		name, hex string
		read      func(r *wire.MsgpackReader) error
		want      error
	}{
		{"int from str", "a1 61", func(r *wire.MsgpackReader) error { _, err := r.ReadInt(); return err }, wire.ErrMsgpackType},
		{"int from float", "ca 3f c0 00 00", func(r *wire.MsgpackReader) error { _, err := r.ReadInt(); return err }, wire.ErrMsgpackType},
		{"int from uint64 max", "cf ff ff ff ff ff ff ff ff", func(r *wire.MsgpackReader) error { _, err := r.ReadInt(); return err }, wire.ErrMsgpackRange},
		{"uint from negative fixint", "ff", func(r *wire.MsgpackReader) error { _, err := r.ReadUint(); return err }, wire.ErrMsgpackRange},
		{"uint from int64 negative", "d3 ff ff ff ff ff ff ff fe", func(r *wire.MsgpackReader) error { _, err := r.ReadUint(); return err }, wire.ErrMsgpackRange},
		{"float from bool", "c3", func(r *wire.MsgpackReader) error { _, err := r.ReadFloat(); return err }, wire.ErrMsgpackType},
		{"float from nil", "c0", func(r *wire.MsgpackReader) error { _, err := r.ReadFloat(); return err }, wire.ErrMsgpackType},
		{"str from bin", "c4 01 61", func(r *wire.MsgpackReader) error { _, err := r.ReadStringBytes(); return err }, wire.ErrMsgpackType},
		{"bin from str", "a1 61", func(r *wire.MsgpackReader) error { _, err := r.ReadBytes(); return err }, wire.ErrMsgpackType},
		{"bool from int", "01", func(r *wire.MsgpackReader) error { _, err := r.ReadBool(); return err }, wire.ErrMsgpackType},
		{"array from map", "80", func(r *wire.MsgpackReader) error { _, err := r.ReadArrayHeader(); return err }, wire.ErrMsgpackType},
		{"map from array", "90", func(r *wire.MsgpackReader) error { _, err := r.ReadMapHeader(); return err }, wire.ErrMsgpackType},
		{"ext from str", "a0", func(r *wire.MsgpackReader) error { _, _, err := r.ReadExt(); return err }, wire.ErrMsgpackType},
		{"skip never-used byte", "c1", func(r *wire.MsgpackReader) error { return r.Skip() }, wire.ErrMsgpackInvalid},
	}
	for _, tt := range mismatches {
		t.Run(tt.name, func(t *testing.T) {
			r := mpReader(t, tt.hex)
			err := tt.read(r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got := r.Offset(); got != 0 {
				t.Errorf("Offset() = %d after error, want 0", got)
			}
		})
	}
	t.Run("range message", func(t *testing.T) {
		_, err := mpReader(t, "ff").ReadUint()
		if got, want := err.Error(), "msgpack: number out of range: -1 does not fit uint at offset 0"; got != want {
			t.Errorf("error = %q, want %q", got, want)
		}
	})
}

// mpDocument is a value that uses every format family, for truncation and
// walking tests.
func mpDocument(t testing.TB) []byte {
	t.Helper()
	return mpHex(t, "8b"+
		"a1 61 93 00 ff cc ff"+ // "a": [0, -1, 255]
		"a1 62 92 cd 01 00 d1 80 00"+ // "b": [256, -32768]
		"a1 63 92 ce 00 01 00 00 d2 80 00 00 00"+ // "c": [65536, MinInt32]
		"a1 64 92 cf 00 00 00 01 00 00 00 00 d3 ff ff ff ff ff ff ff ff"+ // "d": [2^32, -1]
		"a1 65 92 ca 3f c0 00 00 cb 3f f8 00 00 00 00 00 00"+ // "e": [1.5, 1.5]
		"a1 66 93 d9 01 78 da 00 01 79 db 00 00 00 01 7a"+ // "f": [str8, str16, str32]
		"a1 67 93 c4 01 01 c5 00 01 02 c6 00 00 00 01 03"+ // "g": [bin8, bin16, bin32]
		"a1 68 92 dc 00 01 c0 dd 00 00 00 01 c3"+ // "h": [array16 [nil], array32 [true]]
		"a1 69 92 de 00 01 a1 6b c2 df 00 00 00 00"+ // "i": [map16 {"k": false}, map32 {}]
		"a1 6a d6 ff 65 5c 9a 80"+ // "j": timestamp32
		"a0 80") // "": {}
}

func TestMsgpackCheckAccepts(t *testing.T) {
	doc := mpDocument(t)
	if err := wire.CheckMsgpack(doc, wire.DefaultMsgpackLimits); err != nil {
		t.Fatalf("CheckMsgpack(document) = %v", err)
	}
	var v any
	if err := msgpack.Unmarshal(doc, &v); err != nil {
		t.Fatalf("the library refuses the test document: %v", err)
	}
	r := wire.NewMsgpackReader(doc, wire.DefaultMsgpackLimits)
	if err := r.Skip(); err != nil {
		t.Fatalf("Skip(document) = %v", err)
	}
	mpDone(t, r)
}

// mpFrame is a telemetry-like frame: [device, seq, ts, metric, value, unit].
func mpFrame(t testing.TB) []byte {
	t.Helper()
	return mpHex(t, "96 a5 64 65 76 2d 31 cd 04 d2 d3 17 97 9c fe 36 2a 00 00 a4 74 65 6d 70 cb 40 35 80 00 00 00 00 00 a1 43")
}

func mpReadFrame(r *wire.MsgpackReader) error {
	if _, err := r.ReadArrayHeader(); err != nil {
		return err
	}
	if _, err := r.ReadStringBytes(); err != nil {
		return err
	}
	if _, err := r.ReadUint(); err != nil {
		return err
	}
	if _, err := r.ReadInt(); err != nil {
		return err
	}
	if _, err := r.ReadStringBytes(); err != nil {
		return err
	}
	if _, err := r.ReadFloat(); err != nil {
		return err
	}
	_, err := r.ReadStringBytes()
	return err
}

func TestMsgpackReadFrameAllocatesNothing(t *testing.T) {
	frame := mpFrame(t)
	var r wire.MsgpackReader
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(frame, wire.DefaultMsgpackLimits)
		if err := mpReadFrame(&r); err != nil || r.Remaining() != 0 {
			t.Fatalf("read frame: %v, %d bytes left", err, r.Remaining())
		}
	})
	if allocs != 0 {
		t.Errorf("reading a frame allocated %v times, want 0", allocs)
	}
	doc := mpDocument(t)
	allocs = testing.AllocsPerRun(100, func() {
		if err := wire.CheckMsgpack(doc, wire.DefaultMsgpackLimits); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("CheckMsgpack allocated %v times, want 0", allocs)
	}
}

func BenchmarkMsgpackReadFrame(b *testing.B) {
	frame := mpFrame(b)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	var r wire.MsgpackReader
	for b.Loop() {
		r.Reset(frame, wire.DefaultMsgpackLimits)
		if err := mpReadFrame(&r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMsgpackCheck(b *testing.B) {
	frame := mpFrame(b)
	// An array of 1000 frames.
	doc := append([]byte{0xdc, 0x03, 0xe8}, bytes.Repeat(frame, 1000)...)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := wire.CheckMsgpack(doc, wire.DefaultMsgpackLimits); err != nil {
			b.Fatal(err)
		}
	}
}
