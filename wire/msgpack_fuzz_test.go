package wire_test

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/synapse-edge/synapse/wire"
)

func TestMsgpackCheckRefuses(t *testing.T) {
	tests := []struct {
		name, hex string
		lim       wire.MsgpackLimits
		want      error
	}{
		{"empty input", "", wire.MsgpackLimits{}, wire.ErrMsgpackTruncated},
		{"array32 of 2^32-1 in 5 bytes", "dd ff ff ff ff", wire.MsgpackLimits{MaxLen: math.MaxInt}, wire.ErrMsgpackTruncated},
		{"array32 of 2^32-1 over the default limit", "dd ff ff ff ff", wire.DefaultMsgpackLimits, wire.ErrMsgpackTruncated},
		{"array over MaxLen", "94 01 02 03 04", wire.MsgpackLimits{MaxLen: 3}, wire.ErrMsgpackTooLarge},
		{"map32 of 2^32-1", "df ff ff ff ff 00 00", wire.MsgpackLimits{}, wire.ErrMsgpackTruncated},
		{"map needs two bytes an entry", "82 a0 a0 a0", wire.MsgpackLimits{}, wire.ErrMsgpackTruncated},
		{"str32 of 2^32-1", "db ff ff ff ff 61", wire.MsgpackLimits{}, wire.ErrMsgpackTruncated},
		{"bin32 of 2^32-1", "c6 ff ff ff ff 61", wire.MsgpackLimits{}, wire.ErrMsgpackTruncated},
		{"ext32 of 2^32-1", "c9 ff ff ff ff 01 61", wire.MsgpackLimits{}, wire.ErrMsgpackTruncated},
		{"never-used byte", "91 c1", wire.MsgpackLimits{}, wire.ErrMsgpackInvalid},
		{"trailing bytes", "01 02", wire.MsgpackLimits{}, wire.ErrMsgpackInvalid},
		{"integer map key", "81 01 02", wire.MsgpackLimits{}, wire.ErrMsgpackType},
		{"array map key", "81 90 02", wire.MsgpackLimits{}, wire.ErrMsgpackType},
		{"nested integer map key", "91 82 a1 61 01 02 03", wire.MsgpackLimits{}, wire.ErrMsgpackType},
		{"unknown ext type", "d4 05 01", wire.MsgpackLimits{}, wire.ErrMsgpackType},
		{"timestamp of 2 bytes", "d5 ff 00 01", wire.MsgpackLimits{}, wire.ErrMsgpackType},
		{"depth 3 over MaxDepth 2", "91 91 91 c0", wire.MsgpackLimits{MaxDepth: 2}, wire.ErrMsgpackTooDeep},
		{"empty container counts as a level", "91 91 90", wire.MsgpackLimits{MaxDepth: 2}, wire.ErrMsgpackTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wire.CheckMsgpack(mpHex(t, tt.hex), tt.lim)
			if !errors.Is(err, tt.want) {
				t.Errorf("CheckMsgpack = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("depth at the limit", func(t *testing.T) {
		if err := wire.CheckMsgpack(mpHex(t, "91 91 c0"), wire.MsgpackLimits{MaxDepth: 2}); err != nil {
			t.Errorf("CheckMsgpack(depth 2, MaxDepth 2) = %v", err)
		}
	})
	t.Run("skip is lenient about keys and ext", func(t *testing.T) {
		r := mpReader(t, "82 01 d4 05 01 90 c0")
		if err := r.Skip(); err != nil {
			t.Fatalf("Skip = %v", err)
		}
		mpDone(t, r)
	})
}

func TestMsgpackHostileNesting(t *testing.T) {
	arrays := append(bytes.Repeat([]byte{0x91}, 1000), 0xc0)
	maps := append(bytes.Repeat([]byte{0x81, 0xa1, 0x6b}, 1000), 0xc0)
	for name, b := range map[string][]byte{"arrays": arrays, "maps": maps} {
		t.Run(name, func(t *testing.T) {
			if err := wire.CheckMsgpack(b, wire.DefaultMsgpackLimits); !errors.Is(err, wire.ErrMsgpackTooDeep) {
				t.Errorf("CheckMsgpack = %v, want ErrMsgpackTooDeep", err)
			}
			r := wire.NewMsgpackReader(b, wire.DefaultMsgpackLimits)
			if err := r.Skip(); !errors.Is(err, wire.ErrMsgpackTooDeep) {
				t.Errorf("Skip = %v, want ErrMsgpackTooDeep", err)
			}
			if r.Offset() != 0 {
				t.Errorf("Offset() = %d after a failed Skip, want 0", r.Offset())
			}
			// With a limit above the depth the same input is fine: the walk
			// is iterative, so depth costs no stack.
			if err := wire.CheckMsgpack(b, wire.MsgpackLimits{MaxDepth: 1000}); err != nil {
				t.Errorf("CheckMsgpack(MaxDepth 1000) = %v", err)
			}
		})
	}
}

// TestMsgpackHugeDeclarationAllocatesNothing shows that a header declaring
// 2^32-1 elements is refused without allocating for them.
func TestMsgpackHugeDeclarationAllocatesNothing(t *testing.T) {
	b := mpHex(t, "dd ff ff ff ff")
	lim := wire.MsgpackLimits{MaxLen: math.MaxInt}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 100
	for range runs {
		if err := wire.CheckMsgpack(b, lim); err == nil {
			t.Fatal("CheckMsgpack accepted a 2^32-1 element array in 5 bytes")
		}
		r := wire.NewMsgpackReader(b, lim)
		if _, err := r.ReadArrayHeader(); err == nil {
			t.Fatal("ReadArrayHeader accepted a 2^32-1 element array in 5 bytes")
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4096 {
		t.Errorf("refusing the header allocated %d bytes per run, want only the error", per)
	}
}

func TestMsgpackEveryTruncationFails(t *testing.T) {
	doc := mpDocument(t)
	for i := range len(doc) {
		b := doc[:i]
		if err := wire.CheckMsgpack(b, wire.DefaultMsgpackLimits); !errors.Is(err, wire.ErrMsgpackTruncated) {
			t.Errorf("CheckMsgpack(first %d bytes) = %v, want ErrMsgpackTruncated", i, err)
		}
		r := wire.NewMsgpackReader(b, wire.DefaultMsgpackLimits)
		if err := r.Skip(); !errors.Is(err, wire.ErrMsgpackTruncated) {
			t.Errorf("Skip(first %d bytes) = %v, want ErrMsgpackTruncated", i, err)
		}
	}
	// Each scalar reader on each cut of each scalar encoding.
	scalars := []string{"cc ff", "cd 01 00", "ce 00 01 00 00", "cf 00 00 00 01 00 00 00 00",
		"d0 80", "d1 80 00", "d2 80 00 00 00", "d3 80 00 00 00 00 00 00 00",
		"ca 3f c0 00 00", "cb 3f f8 00 00 00 00 00 00", "a3 61 62 63", "d9 01 61", "da 00 01 61",
		"db 00 00 00 01 61", "c4 01 61", "c5 00 01 61", "c6 00 00 00 01 61", "dc 00 01 c0",
		"dd 00 00 00 01 c0", "de 00 01 a0 c0", "df 00 00 00 01 a0 c0", "d4 01 01", "c7 01 01 01",
		"c8 00 01 01 01", "c9 00 00 00 01 01 01"}
	reads := map[string]func(r *wire.MsgpackReader) error{
		"int":   func(r *wire.MsgpackReader) error { _, err := r.ReadInt(); return err },
		"uint":  func(r *wire.MsgpackReader) error { _, err := r.ReadUint(); return err },
		"float": func(r *wire.MsgpackReader) error { _, err := r.ReadFloat(); return err },
		"str":   func(r *wire.MsgpackReader) error { _, err := r.ReadStringBytes(); return err },
		"bin":   func(r *wire.MsgpackReader) error { _, err := r.ReadBytes(); return err },
		"ext":   func(r *wire.MsgpackReader) error { _, _, err := r.ReadExt(); return err },
		"array": func(r *wire.MsgpackReader) error { _, err := r.ReadArrayHeader(); return err },
		"map":   func(r *wire.MsgpackReader) error { _, err := r.ReadMapHeader(); return err },
		"bool":  func(r *wire.MsgpackReader) error { _, err := r.ReadBool(); return err },
		"skip":  func(r *wire.MsgpackReader) error { return r.Skip() },
	}
	for _, s := range scalars {
		full := mpHex(t, s)
		for i := range len(full) {
			for name, read := range reads {
				r := wire.NewMsgpackReader(full[:i], wire.DefaultMsgpackLimits)
				err := read(r)
				if err == nil {
					t.Errorf("%s of the first %d bytes of %s: no error", name, i, s)
				}
				if r.Offset() != 0 {
					t.Errorf("%s of the first %d bytes of %s: Offset() = %d after error", name, i, s, r.Offset())
				}
			}
		}
	}
}

// FuzzMsgpackCheck checks that CheckMsgpack never panics, that it agrees
// with Skip, and that whatever it accepts the msgpack library decodes: it is
// the guard in front of that library.
func FuzzMsgpackCheck(f *testing.F) {
	f.Add(mpDocument(f))
	f.Add(mpFrame(f))
	for _, s := range []string{"", "c0", "c1", "dd ff ff ff ff", "df ff ff ff ff 00 00", "91 91 91 91 c0",
		"81 01 02", "d6 ff 00 00 00 01", "d4 05 01", "cf ff ff ff ff ff ff ff ff", "db 00 00 00 02 61"} {
		f.Add(mpHex(f, s))
	}
	lim := wire.MsgpackLimits{MaxDepth: 16, MaxLen: 1 << 16}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := wire.CheckMsgpack(b, lim)

		r := wire.NewMsgpackReader(b, lim)
		skipErr := r.Skip()
		switch {
		case skipErr != nil && r.Offset() != 0:
			t.Fatalf("Skip failed with %v but moved to offset %d", skipErr, r.Offset())
		case err == nil && (skipErr != nil || r.Remaining() != 0):
			t.Fatalf("CheckMsgpack accepts but Skip = %v with %d bytes left", skipErr, r.Remaining())
		case skipErr != nil && err == nil:
			t.Fatalf("Skip refuses (%v) what CheckMsgpack accepts", skipErr)
		}
		if err != nil {
			known := []error{wire.ErrMsgpackTruncated, wire.ErrMsgpackTooLarge, wire.ErrMsgpackTooDeep,
				wire.ErrMsgpackType, wire.ErrMsgpackInvalid}
			for _, k := range known {
				if errors.Is(err, k) {
					return
				}
			}
			t.Fatalf("CheckMsgpack error %v wraps no sentinel", err)
		}
		var v any
		if err := msgpack.Unmarshal(b, &v); err != nil {
			t.Fatalf("CheckMsgpack accepts %x but msgpack.Unmarshal fails: %v", b, err)
		}
	})
}
