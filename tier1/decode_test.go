package tier1_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// typeRoutines are one routine per field type, id "t.<type>", version "1",
// with a single field "v".
func typeRoutines() []tier1.Descriptor {
	var ds []tier1.Descriptor
	for _, typ := range []tier1.FieldType{tier1.TypeStr, tier1.TypeInt, tier1.TypeUint, tier1.TypeFloat, tier1.TypeBool, tier1.TypeBin} {
		ds = append(ds, tier1.Descriptor{CapabilityID: "t." + string(typ), Version: "1",
			Fields: []tier1.Field{{Name: "v", Type: typ}}})
	}
	return ds
}

// mixed has every type and an optional field in the middle.
func mixed() tier1.Descriptor {
	return tier1.Descriptor{CapabilityID: "t.mixed", Version: "2", Fields: []tier1.Field{
		{Name: "s", Type: tier1.TypeStr},
		{Name: "i", Type: tier1.TypeInt, Optional: true},
		{Name: "u", Type: tier1.TypeUint},
		{Name: "f", Type: tier1.TypeFloat},
		{Name: "b", Type: tier1.TypeBool, Optional: true},
		{Name: "x", Type: tier1.TypeBin, Optional: true},
	}}
}

func testRegistry(t testing.TB) *tier1.Registry {
	t.Helper()
	reg, err := tier1.NewRegistry(append(typeRoutines(), tier1.Telemetry(), mixed())...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// exampleBatch is the batch of the package documentation, byte by byte.
const exampleBatch = `
94                                 // array of 4: the batch
b1 73 79 6e 61 70 73 65 2e 74 65 6c 65 6d 65 74 72 79 // "synapse.telemetry"
a5 31 2e 30 2e 30                  // "1.0.0"
91                                 // array of 1: the frames
96                                 // array of 6: frame 0
a8 73 65 6e 73 6f 72 2d 37         // "sensor-7"
2a                                 // 42
cf 17 97 9c fe 36 2a 00 00         // 1700000000000000000
a4 74 65 6d 70                     // "temp"
ca 41 ac 00 00                     // 21.5 as float32
a1 43                              // "C"
a3 62 2d 31                        // "b-1"`

// exampleHex strips the comments from exampleBatch.
func exampleHex(t testing.TB) []byte {
	t.Helper()
	var hexText []string
	for _, line := range strings.Split(exampleBatch, "\n") {
		code, _, _ := strings.Cut(line, "//")
		hexText = append(hexText, code)
	}
	return unhex(t, strings.Join(hexText, " "))
}

func exampleFrame() tier1.Frame {
	return tier1.Frame{tier1.Str("sensor-7"), tier1.Uint(42), tier1.Int(1700000000000000000),
		tier1.Str("temp"), tier1.Float(21.5), tier1.Str("C")}
}

func TestDecodeBatchKnownAnswer(t *testing.T) {
	b := exampleHex(t)
	if len(b) != 62 {
		t.Fatalf("example batch is %d bytes, want 62", len(b))
	}
	batch, err := tier1.DecodeBatch(b, testRegistry(t), tier1.Limits{})
	if err != nil {
		t.Fatalf("DecodeBatch: %v", err)
	}
	if batch.CapabilityID != "synapse.telemetry" || batch.Version != "1.0.0" || batch.BatchID != "b-1" {
		t.Errorf("header = %q %q %q", batch.CapabilityID, batch.Version, batch.BatchID)
	}
	if batch.Desc == nil || batch.Desc.CapabilityID != "synapse.telemetry" {
		t.Errorf("Desc = %+v", batch.Desc)
	}
	if len(batch.Frames) != 1 {
		t.Fatalf("%d frames, want 1", len(batch.Frames))
	}
	got, want := batch.Frames[0], exampleFrame()
	if !got.Equal(want) || len(got) != len(want) {
		t.Errorf("frame = %v, want %v", got, want)
	}
	if got := got[2].Int(); got != 1700000000000000000 {
		t.Errorf("ts = %d", got)
	}
	// The decoded batch does not alias the input.
	for i := range b {
		b[i] = 0
	}
	if got[0].Str() != "sensor-7" || batch.BatchID != "b-1" {
		t.Errorf("decoded strings changed with the input: %v %q", got, batch.BatchID)
	}

	d := tier1.Telemetry()
	enc := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "b-1", []tier1.Frame{exampleFrame()}, &d)
	if want := exampleHex(t); !bytes.Equal(enc, want) {
		t.Errorf("AppendBatch =\n%x\nwant\n%x", enc, want)
	}
}

func TestDecodeAcceptedEncodings(t *testing.T) {
	reg := testRegistry(t)
	long := strings.Repeat("é", 40) // 80 bytes: str 8
	tests := []struct {
		typ, name, value string
		want             tier1.Value
	}{
		{"int", "positive fixint", "05", tier1.Int(5)},
		{"int", "negative fixint", "e0", tier1.Int(-32)},
		{"int", "uint8", "cc ff", tier1.Int(255)},
		{"int", "uint16", "cd ff ff", tier1.Int(65535)},
		{"int", "uint32", "ce ff ff ff ff", tier1.Int(math.MaxUint32)},
		{"int", "uint64 max int64", "cf 7f ff ff ff ff ff ff ff", tier1.Int(math.MaxInt64)},
		{"int", "int8", "d0 80", tier1.Int(-128)},
		{"int", "int16", "d1 80 00", tier1.Int(math.MinInt16)},
		{"int", "int32", "d2 80 00 00 00", tier1.Int(math.MinInt32)},
		{"int", "int64", "d3 80 00 00 00 00 00 00 00", tier1.Int(math.MinInt64)},
		{"uint", "positive fixint", "7f", tier1.Uint(127)},
		{"uint", "uint8", "cc 80", tier1.Uint(128)},
		{"uint", "uint64 max", "cf ff ff ff ff ff ff ff ff", tier1.Uint(math.MaxUint64)},
		{"uint", "int8 non-negative", "d0 05", tier1.Uint(5)},
		{"uint", "int64 non-negative", "d3 00 00 00 00 00 00 01 00", tier1.Uint(256)},
		{"float", "int 20 for 20.0", "14", tier1.Float(20)},
		{"float", "negative fixint", "ec", tier1.Float(-20)},
		{"float", "uint8", "cc c8", tier1.Float(200)},
		{"float", "int64", "d3 ff ff ff ff ff ff ff 00", tier1.Float(-256)},
		{"float", "float32", "ca 41 ac 00 00", tier1.Float(21.5)},
		{"float", "float64", "cb 3f b9 99 99 99 99 99 9a", tier1.Float(0.1)},
		{"float", "float64 NaN", "cb 7f f8 00 00 00 00 00 01", tier1.Float(math.Float64frombits(0x7ff8000000000001))},
		{"str", "fixstr", "a3 61 62 63", tier1.Str("abc")},
		{"str", "str8", "d9 50 " + hex.EncodeToString([]byte(long)), tier1.Str(long)},
		{"str", "str16", "da 00 01 61", tier1.Str("a")},
		{"str", "str32", "db 00 00 00 01 61", tier1.Str("a")},
		{"str", "bin holding UTF-8", "c4 02 c3 a9", tier1.Str("é")},
		{"bin", "bin8", "c4 02 00 ff", tier1.Bin([]byte{0, 0xff})},
		{"bin", "bin16", "c5 00 01 07", tier1.Bin([]byte{7})},
		{"bin", "bin32", "c6 00 00 00 00", tier1.Bin(nil)},
		{"bin", "str", "a2 00 ff", tier1.Bin([]byte{0, 0xff})},
		{"bool", "false", "c2", tier1.Bool(false)},
		{"bool", "true", "c3", tier1.Bool(true)},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.name, func(t *testing.T) {
			b := oneValueBatch(t, tt.typ, tt.value)
			batch, err := tier1.DecodeBatch(b, reg, tier1.Limits{})
			if err != nil {
				t.Fatalf("DecodeBatch(%x): %v", b, err)
			}
			if got := batch.Frames[0].At(0); !got.Equal(tt.want) {
				t.Errorf("value = %v (%v), want %v (%v)", got, got.Kind(), tt.want, tt.want.Kind())
			}
		})
	}
}

// oneValueBatch is a batch of routine t.<typ> with one frame of one value.
func oneValueBatch(t testing.TB, typ, value string) []byte {
	t.Helper()
	id := "t." + typ
	return unhex(t, hex.EncodeToString([]byte{0x93, 0xa0 | byte(len(id))})+hex.EncodeToString([]byte(id))+
		"a1 31 91 91 "+value)
}

func TestDecodeRefusedValues(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		typ, name, value string
		want             error
	}{
		{"int", "uint64 above max int64", "cf 80 00 00 00 00 00 00 00", wire.ErrMsgpackRange},
		{"int", "float", "ca 41 ac 00 00", wire.ErrMsgpackType},
		{"int", "str", "a1 31", wire.ErrMsgpackType},
		{"uint", "negative fixint", "ff", wire.ErrMsgpackRange},
		{"uint", "negative int8", "d0 ff", wire.ErrMsgpackRange},
		{"uint", "negative int64", "d3 80 00 00 00 00 00 00 00", wire.ErrMsgpackRange},
		{"uint", "float64", "cb 3f b9 99 99 99 99 99 9a", wire.ErrMsgpackType},
		{"float", "str", "a4 32 30 2e 30", wire.ErrMsgpackType},
		{"float", "bool", "c3", wire.ErrMsgpackType},
		{"str", "int", "01", wire.ErrMsgpackType},
		{"str", "invalid UTF-8", "a2 c3 28", tier1.ErrInvalidUTF8},
		{"str", "bin with invalid UTF-8", "c4 01 ff", tier1.ErrInvalidUTF8},
		{"str", "array", "91 a1 61", wire.ErrMsgpackType},
		{"str", "ext", "d4 01 01", wire.ErrMsgpackType},
		{"bin", "int", "01", wire.ErrMsgpackType},
		{"bool", "int 1", "01", wire.ErrMsgpackType},
		{"bool", "nil", "c0", tier1.ErrMissingField},
		{"int", "never-used byte", "c1", wire.ErrMsgpackType},
	}
	for _, tt := range tests {
		t.Run(tt.typ+"/"+tt.name, func(t *testing.T) {
			_, err := tier1.DecodeBatch(oneValueBatch(t, tt.typ, tt.value), reg, tier1.Limits{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeBatch = %v, want %v", err, tt.want)
			}
			var fe *tier1.FrameError
			if !errors.As(err, &fe) || fe.Index != 0 || fe.Field != "v" {
				t.Errorf("FrameError = %+v, want frame 0 field v", fe)
			}
			if !errors.Is(err, tier1.ErrMalformedBatch) {
				t.Errorf("errors.Is(%v, ErrMalformedBatch) = false", err)
			}
		})
	}
	t.Run("length limits", func(t *testing.T) {
		lim := tier1.Limits{MaxStrLen: 2, MaxBinLen: 3}
		if _, err := tier1.DecodeBatch(oneValueBatch(t, "str", "a2 61 62"), reg, lim); err != nil {
			t.Errorf("str at MaxStrLen: %v", err)
		}
		if _, err := tier1.DecodeBatch(oneValueBatch(t, "str", "a3 61 62 63"), reg, lim); !errors.Is(err, tier1.ErrValueTooLong) {
			t.Errorf("str over MaxStrLen: %v, want ErrValueTooLong", err)
		}
		if _, err := tier1.DecodeBatch(oneValueBatch(t, "bin", "c4 03 01 02 03"), reg, lim); err != nil {
			t.Errorf("bin at MaxBinLen: %v", err)
		}
		if _, err := tier1.DecodeBatch(oneValueBatch(t, "bin", "c4 04 01 02 03 04"), reg, lim); !errors.Is(err, tier1.ErrValueTooLong) {
			t.Errorf("bin over MaxBinLen: %v, want ErrValueTooLong", err)
		}
	})
}

func TestDecodeFrameShapes(t *testing.T) {
	reg := testRegistry(t)
	head := "93 b1 73796e617073652e74656c656d65747279 a5 312e302e30 91"
	frame5 := "95 a1 64 01 02 a1 6d cb 3f f8 00 00 00 00 00 00" // unit absent
	tests := []struct {
		name, frame string
		want        tier1.Frame
		field       string
		err         error
	}{
		{"trailing optional absent", frame5, tier1.Frame{tier1.Str("d"), tier1.Uint(1), tier1.Int(2), tier1.Str("m"), tier1.Float(1.5)}, "", nil},
		{"trailing optional nil", "96" + frame5[2:] + " c0", tier1.Frame{tier1.Str("d"), tier1.Uint(1), tier1.Int(2), tier1.Str("m"), tier1.Float(1.5)}, "", nil},
		{"required field absent", "94 a1 64 01 02 a1 6d", nil, "value", tier1.ErrMissingField},
		{"required field nil", "96 a1 64 01 02 c0 01 c0", nil, "metric", tier1.ErrMissingField},
		// The padding after the next three keeps the batch long enough for
		// one frame of five required values, so the frame itself is judged.
		{"empty frame", "90 c0c0c0c0c0", nil, "device_id", tier1.ErrMissingField},
		{"more values than fields", "97 a1 64 01 02 a1 6d 01 a0 a0", nil, "", tier1.ErrExtraValues},
		{"frame is a map", "81 a1 64 01 c0c0", nil, "", wire.ErrMsgpackType},
		{"frame is a str", "a1 64 c0c0c0c0", nil, "", wire.ErrMsgpackType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batch, err := tier1.DecodeBatch(unhex(t, head+tt.frame), reg, tier1.Limits{})
			if tt.err != nil {
				var fe *tier1.FrameError
				if !errors.Is(err, tt.err) || !errors.As(err, &fe) || fe.Field != tt.field {
					t.Fatalf("DecodeBatch = %v, want %v in field %q", err, tt.err, tt.field)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeBatch: %v", err)
			}
			if got := batch.Frames[0]; !got.Equal(tt.want) || len(got) != len(tt.want) {
				t.Errorf("frame = %v, want %v", got, tt.want)
			}
			if got := batch.Frames[0].At(5); !got.IsNull() {
				t.Errorf("At(5) = %v, want null", got)
			}
		})
	}
	t.Run("optional in the middle", func(t *testing.T) {
		// ["a", nil, 7, 1.5] for t.mixed: i is nil, b and x absent.
		b := unhex(t, "93 a7 742e6d69786564 a1 32 91 94 a1 61 c0 07 ca 3f c0 00 00")
		batch, err := tier1.DecodeBatch(b, reg, tier1.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want := tier1.Frame{tier1.Str("a"), tier1.Null(), tier1.Uint(7), tier1.Float(1.5)}
		if got := batch.Frames[0]; !got.Equal(want) {
			t.Errorf("frame = %v, want %v", got, want)
		}
	})
}

func TestDecodeBatchErrors(t *testing.T) {
	reg := testRegistry(t)
	const id = "b1 73796e617073652e74656c656d65747279 a5 312e302e30"
	frame := "96 a1 64 01 02 a1 6d 03 a0"
	tests := []struct {
		name, hex string
		lim       tier1.Limits
		want      error
	}{
		{"empty input", "", tier1.Limits{}, wire.ErrMsgpackTruncated},
		{"a map", "81 a1 61 01", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"two elements", "92 " + id, tier1.Limits{}, tier1.ErrMalformedBatch},
		{"five elements", "95 " + id + " 90 c0 c0", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"capability_id not a str", "93 01 a1 31 90", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"unknown routine", "93 a3 6e6f70 a1 31 90", tier1.Limits{}, tier1.ErrUnknownRoutine},
		{"version mismatch", "93 b1 73796e617073652e74656c656d65747279 a5 322e302e30 90", tier1.Limits{}, tier1.ErrVersionMismatch},
		{"version not a str", "93 b1 73796e617073652e74656c656d65747279 01 90", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"frames not an array", "93 " + id + " 80", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"batch_id an int", "94 " + id + " 90 01", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"batch_id too long", "94 " + id + " 90 a3 616263", tier1.Limits{MaxStrLen: 2}, tier1.ErrValueTooLong},
		{"batch_id invalid UTF-8", "94 " + id + " 90 a1 ff", tier1.Limits{}, tier1.ErrInvalidUTF8},
		{"trailing byte", "93 " + id + " 90 c0", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"more frames than MaxFrames", "93 " + id + " 93" + strings.Repeat(frame, 3), tier1.Limits{MaxFrames: 2}, tier1.ErrTooManyFrames},
		{"2^32-1 frames in 5 bytes", "93 " + id + " dd ff ff ff ff", tier1.Limits{MaxFrames: math.MaxInt32}, wire.ErrMsgpackTruncated},
		{"more frames than bytes allow", "93 " + id + " 9a" + strings.Repeat("00", 20), tier1.Limits{}, wire.ErrMsgpackTruncated},
		{"1000-deep nesting as the batch", strings.Repeat("91", 1000) + "c0", tier1.Limits{}, tier1.ErrMalformedBatch},
		{"1000-deep nesting as a frame", "93 " + id + " 91 " + strings.Repeat("91", 1000) + "c0", tier1.Limits{}, tier1.ErrMissingField},
		{"1000-deep nesting as a value", "93 " + id + " 91 96 " + strings.Repeat("91", 1000) + "c0 01 02 a1 6d 03", tier1.Limits{}, wire.ErrMsgpackType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			batch, err := tier1.DecodeBatch(unhex(t, tt.hex), reg, tt.lim)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeBatch = %v, %v; want %v", batch, err, tt.want)
			}
			if batch != nil {
				t.Errorf("DecodeBatch returned a batch with error %v", err)
			}
		})
	}
	t.Run("nil registry", func(t *testing.T) {
		if _, err := tier1.DecodeBatch(exampleHex(t), nil, tier1.Limits{}); !errors.Is(err, tier1.ErrUnknownRoutine) {
			t.Errorf("DecodeBatch(nil registry) = %v, want ErrUnknownRoutine", err)
		}
	})
}

func TestFrameErrorMessage(t *testing.T) {
	d := tier1.Telemetry()
	frames := []tier1.Frame{exampleFrame(), exampleFrame(), exampleFrame(), exampleFrame()}
	frames[3][4] = tier1.Str("21.5")
	b := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", frames, nil)
	_, err := tier1.DecodeBatch(b, testRegistry(t), tier1.Limits{})
	if got, want := err.Error(), `frame 3: field "value": msgpack: expected float, found str at offset 147`; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	var fe *tier1.FrameError
	if !errors.As(err, &fe) || fe.Index != 3 || fe.Field != "value" {
		t.Errorf("FrameError = %+v", fe)
	}
	if !errors.Is(err, wire.ErrMsgpackType) {
		t.Errorf("errors.Is(err, ErrMsgpackType) = false")
	}
}

// TestDecodeHugeDeclarationAllocatesNothing: a batch declaring 2^32-1
// frames is refused before anything is allocated for them.
func TestDecodeHugeDeclarationAllocatesNothing(t *testing.T) {
	reg := testRegistry(t)
	b := unhex(t, "93 b1 73796e617073652e74656c656d65747279 a5 312e302e30 dd ff ff ff ff")
	lim := tier1.Limits{MaxFrames: math.MaxInt32}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 100
	for range runs {
		if _, err := tier1.DecodeBatch(b, reg, lim); err == nil {
			t.Fatal("DecodeBatch accepted 2^32-1 frames in 5 bytes")
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4096 {
		t.Errorf("refusing the batch allocated %d bytes per run, want only the error", per)
	}
}

func TestDecodeEveryTruncation(t *testing.T) {
	reg := testRegistry(t)
	m := mixed()
	batches := map[string][]byte{
		"example": exampleHex(t),
		"mixed": tier1.AppendBatch(nil, m.CapabilityID, m.Version, "id-7", []tier1.Frame{
			{tier1.Str("s"), tier1.Int(-300), tier1.Uint(70000), tier1.Float(0.1), tier1.Bool(true), tier1.Bin([]byte("xyz"))},
			{tier1.Str(strings.Repeat("long", 20)), tier1.Null(), tier1.Uint(1), tier1.Float(2)},
		}, &m),
	}
	for name, full := range batches {
		t.Run(name, func(t *testing.T) {
			if _, err := tier1.DecodeBatch(full, reg, tier1.Limits{}); err != nil {
				t.Fatalf("full batch: %v", err)
			}
			for i := range len(full) {
				_, err := tier1.DecodeBatch(full[:i], reg, tier1.Limits{})
				if !errors.Is(err, wire.ErrMsgpackTruncated) || !errors.Is(err, tier1.ErrMalformedBatch) {
					t.Errorf("first %d of %d bytes: %v, want a truncated, malformed batch", i, len(full), err)
				}
			}
		})
	}
}

func TestDecodeFrame(t *testing.T) {
	d := mixed()
	frames := []tier1.Frame{
		{tier1.Str("a"), tier1.Int(-1), tier1.Uint(2), tier1.Float(3.25), tier1.Bool(false), tier1.Bin([]byte{0})},
		{tier1.Str(""), tier1.Null(), tier1.Uint(0), tier1.Float(math.Inf(-1))},
	}
	for _, f := range frames {
		b := tier1.AppendFrame(nil, f)
		got, err := tier1.DecodeFrame(b, &d)
		if err != nil {
			t.Fatalf("DecodeFrame(%x): %v", b, err)
		}
		if !got.Equal(f) {
			t.Errorf("DecodeFrame = %v, want %v", got, f)
		}
		if _, err := tier1.DecodeFrame(append(b, 0xc0), &d); !errors.Is(err, wire.ErrMsgpackInvalid) {
			t.Errorf("DecodeFrame with a trailing byte = %v, want ErrMsgpackInvalid", err)
		}
	}
	bad := tier1.Descriptor{CapabilityID: "x", Version: "1", Fields: []tier1.Field{{Name: "a", Type: "double"}}}
	if _, err := tier1.DecodeFrame([]byte{0x91, 0x01}, &bad); !errors.Is(err, tier1.ErrInvalidDescriptor) {
		t.Errorf("DecodeFrame(unknown type) = %v, want ErrInvalidDescriptor", err)
	}
}
