package tier1_test

import (
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

func TestAppendFrameSmallestEncodings(t *testing.T) {
	s31, s32 := strings.Repeat("a", 31), strings.Repeat("a", 32)
	b256 := strings.Repeat("\x01", 256)
	tests := []struct {
		name string
		v    tier1.Value
		want string
	}{
		{"null", tier1.Null(), "c0"},
		{"false", tier1.Bool(false), "c2"},
		{"true", tier1.Bool(true), "c3"},
		{"int 0", tier1.Int(0), "00"},
		{"int 127", tier1.Int(127), "7f"},
		{"int 128", tier1.Int(128), "cc80"},
		{"int -1", tier1.Int(-1), "ff"},
		{"int -32", tier1.Int(-32), "e0"},
		{"int -33", tier1.Int(-33), "d0df"},
		{"int -129", tier1.Int(-129), "d1ff7f"},
		{"int -32769", tier1.Int(-32769), "d2ffff7fff"},
		{"int min int64", tier1.Int(math.MinInt64), "d38000000000000000"},
		{"int 70000", tier1.Int(70000), "ce00011170"},
		{"uint 65535", tier1.Uint(65535), "cdffff"},
		{"uint 2^32", tier1.Uint(1 << 32), "cf0000000100000000"},
		{"uint max", tier1.Uint(math.MaxUint64), "cfffffffffffffffff"},
		{"float 21.5 as float32", tier1.Float(21.5), "ca41ac0000"},
		{"float 0.1 as float64", tier1.Float(0.1), "cb3fb999999999999a"},
		{"float -0", tier1.Float(math.Copysign(0, -1)), "ca80000000"},
		{"float +Inf", tier1.Float(math.Inf(1)), "ca7f800000"},
		{"str empty", tier1.Str(""), "a0"},
		{"str 31 fixstr", tier1.Str(s31), "bf" + hex.EncodeToString([]byte(s31))},
		{"str 32 str8", tier1.Str(s32), "d920" + hex.EncodeToString([]byte(s32))},
		{"str 256 str16", tier1.Str(b256), "da0100" + hex.EncodeToString([]byte(b256))},
		{"bin 1", tier1.Bin([]byte{7}), "c40107"},
		{"bin 256 bin16", tier1.Bin([]byte(b256)), "c50100" + hex.EncodeToString([]byte(b256))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hex.EncodeToString(tier1.AppendFrame(nil, tier1.Frame{tt.v}))
			if want := "91" + tt.want; got != want {
				t.Errorf("AppendFrame = %s, want %s", got, want)
			}
		})
	}
	t.Run("array headers", func(t *testing.T) {
		for n, want := range map[int]string{0: "90", 15: "9f", 16: "dc0010", 65536: "dd00010000"} {
			got := tier1.AppendBatch(nil, "a", "1", "", make([]tier1.Frame, n), nil)
			if h := hex.EncodeToString(got[5 : 5+len(want)/2]); h != want {
				t.Errorf("frames header for %d = %s, want %s", n, h, want)
			}
		}
	})
}

func TestAppendBatchConvertsToFieldTypes(t *testing.T) {
	d := mixed()
	in := tier1.Frame{tier1.Bin([]byte("s")), tier1.Uint(5), tier1.Int(6), tier1.Int(-7), tier1.Bool(true), tier1.Str("x")}
	want := tier1.Frame{tier1.Str("s"), tier1.Int(5), tier1.Uint(6), tier1.Float(-7), tier1.Bool(true), tier1.Bin([]byte("x"))}
	b := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", []tier1.Frame{in}, &d)
	batch, err := tier1.DecodeBatch(b, testRegistry(t), tier1.Limits{})
	if err != nil {
		t.Fatalf("DecodeBatch: %v", err)
	}
	if got := batch.Frames[0]; !got.Equal(want) {
		t.Errorf("frame = %v, want %v", got, want)
	}
	// A value that has no lossless form in its field's family is written
	// as it is, and the decoder refuses it.
	bad := tier1.Frame{tier1.Str("s"), tier1.Null(), tier1.Int(-1), tier1.Float(0)}
	b = tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", []tier1.Frame{bad}, &d)
	if _, err := tier1.DecodeBatch(b, testRegistry(t), tier1.Limits{}); err == nil {
		t.Error("a negative int for a uint field was accepted")
	}
}

// randomFrame makes a frame of d with values at the edges of each type.
func randomFrame(rng *rand.Rand, d *tier1.Descriptor) tier1.Frame {
	ints := []int64{0, 1, -1, 127, -32, -33, 128, 255, 256, -129, 65535, 65536, -32769, math.MaxInt32, math.MinInt32 - 1, math.MaxInt64, math.MinInt64}
	floats := []float64{0, math.Copysign(0, -1), 1.5, 0.1, -1e300, 1e-310, math.Inf(1), math.NaN(), 21.5, 1 << 60}
	f := make(tier1.Frame, len(d.Fields))
	for i, fd := range d.Fields {
		if fd.Optional && rng.IntN(3) == 0 {
			continue
		}
		switch fd.Type {
		case tier1.TypeStr:
			f[i] = tier1.Str(strings.Repeat("ü", rng.IntN(40)))
		case tier1.TypeInt:
			f[i] = tier1.Int(ints[rng.IntN(len(ints))] + int64(rng.IntN(3)-1))
		case tier1.TypeUint:
			f[i] = tier1.Uint(uint64(ints[rng.IntN(len(ints))]))
		case tier1.TypeFloat:
			f[i] = tier1.Float(floats[rng.IntN(len(floats))])
		case tier1.TypeBool:
			f[i] = tier1.Bool(rng.IntN(2) == 1)
		case tier1.TypeBin:
			b := make([]byte, rng.IntN(300))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			f[i] = tier1.Bin(b)
		}
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	reg := testRegistry(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range reg.List() {
		t.Run(d.CapabilityID, func(t *testing.T) {
			frames := make([]tier1.Frame, 200)
			for i := range frames {
				frames[i] = randomFrame(rng, &d)
			}
			b := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "rt-1", frames, &d)
			batch, err := tier1.DecodeBatch(b, reg, tier1.Limits{})
			if err != nil {
				t.Fatalf("DecodeBatch: %v", err)
			}
			if batch.BatchID != "rt-1" || len(batch.Frames) != len(frames) {
				t.Fatalf("batch id %q, %d frames", batch.BatchID, len(batch.Frames))
			}
			for i, f := range frames {
				if !batch.Frames[i].Equal(f) {
					t.Errorf("frame %d = %v, want %v", i, batch.Frames[i], f)
				}
				if n := len(batch.Frames[i]); n > 0 && batch.Frames[i][n-1].IsNull() {
					t.Errorf("frame %d ends in null", i)
				}
				one, err := tier1.DecodeFrame(tier1.AppendFrame(nil, f), &d)
				if err != nil || !one.Equal(f) {
					t.Errorf("DecodeFrame(AppendFrame(frame %d)) = %v, %v", i, one, err)
				}
			}
		})
	}
}

func TestValueAccessors(t *testing.T) {
	all := []tier1.Value{tier1.Null(), tier1.Str("s"), tier1.Int(-2), tier1.Uint(3), tier1.Float(4.5), tier1.Bool(true), tier1.Bin([]byte{1, 2})}
	for _, v := range all {
		k := v.Kind()
		check := func(name string, isKind, nonZero bool) {
			t.Helper()
			if isKind != nonZero {
				t.Errorf("%v: %s gives a value: %v, want only for its kind", v, name, nonZero)
			}
		}
		check("Int", k == tier1.KindInt, v.Int() != 0)
		check("Uint", k == tier1.KindUint, v.Uint() != 0)
		check("Float", k == tier1.KindFloat, v.Float() != 0)
		check("Bool", k == tier1.KindBool, v.Bool())
		check("Str", k == tier1.KindStr || k == tier1.KindBin, v.Str() != "")
		check("Bytes", k == tier1.KindStr || k == tier1.KindBin, v.Bytes() != nil)
		if v.IsNull() != (k == tier1.KindNull) {
			t.Errorf("%v: IsNull() = %v", v, v.IsNull())
		}
	}
	got := make([]string, len(all))
	for i, v := range all {
		got[i] = v.String() + ":" + v.Kind().String()
	}
	want := `null:null "s":str -2:int 3:uint 4.5:float true:bool 0x0102:bin`
	if strings.Join(got, " ") != want {
		t.Errorf("String() = %s, want %s", strings.Join(got, " "), want)
	}
	b := []byte{9}
	v := tier1.Bin(b)
	b[0] = 0
	if v.Bytes()[0] != 9 {
		t.Error("Bin kept a reference to its argument")
	}
	nan := tier1.Float(math.NaN())
	if !nan.Equal(nan) || tier1.Float(0).Equal(tier1.Float(math.Copysign(0, -1))) {
		t.Error("Equal does not compare floats bit for bit")
	}
	if !(tier1.Frame{tier1.Int(1)}).Equal(tier1.Frame{tier1.Int(1), tier1.Null()}) {
		t.Error("Frame.Equal differs on a trailing null")
	}
}
