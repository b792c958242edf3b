package mqtt

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A known answer: a request of one header and a 2-byte body.
var knownRequest = &frame{typ: frameRequest, id: "r1", from: "gw-7", ctype: "application/json",
	header: map[string]string{"X-Synapse-Seq": "5"}, body: []byte("{}")}

const knownRequestHex = "53594e51" + "01" + "01" + "02" + "7231" + "04" + "67772d37" + "0000" +
	"10" + "6170706c69636174696f6e2f6a736f6e" + "01" + "0d" + "582d53796e617073652d536571" + "0001" + "35" + "00000002" + "7b7d"

func TestFrameKnownAnswer(t *testing.T) {
	got, err := appendFrame(nil, knownRequest)
	if err != nil {
		t.Fatal(err)
	}
	if h := hex.EncodeToString(got); h != knownRequestHex {
		t.Fatalf("encoded\n%s\nwant\n%s", h, knownRequestHex)
	}
	f, err := parseFrame(got)
	if err != nil {
		t.Fatal(err)
	}
	if !sameFrame(f, knownRequest) {
		t.Fatalf("decoded %+v, want %+v", f, knownRequest)
	}
}

func sameFrame(a, b *frame) bool {
	return a.typ == b.typ && a.id == b.id && a.from == b.from && a.status == b.status && a.ctype == b.ctype &&
		maps.Equal(a.header, b.header) && bytes.Equal(a.body, b.body)
}

// Hostile frames: each is refused with ErrFrame, and a declared length
// larger than the frame allocates nothing for it.
func TestFrameHostile(t *testing.T) {
	good, _ := appendFrame(nil, knownRequest)
	answer, _ := appendFrame(nil, &frame{typ: frameAnswer, id: "a", from: "b", status: 202})
	bodyLen := len(good) - 2 - 4 // offset of the body length
	set := func(b []byte, at int, v ...byte) []byte {
		c := bytes.Clone(b)
		copy(c[at:], v)
		return c
	}
	huge := binary.BigEndian.AppendUint32(nil, 0xffffffff)
	cases := map[string][]byte{
		"empty":                    nil,
		"wrong magic":              set(good, 0, 'M', 'Q', 'T', 'T'),
		"version 2":                set(good, 4, 2),
		"type 3":                   set(good, 5, 3),
		"empty id":                 set(good, 6, 0),
		"id longer than the frame": set(good, 6, 200),
		"truncated in the body":    good[:len(good)-1],
		"truncated in a header":    good[:40],
		"trailing bytes":           append(bytes.Clone(good), 0),
		"body length 4 GiB":        set(good, bodyLen, huge...),
		"body length over the max": set(good, bodyLen, binary.BigEndian.AppendUint32(nil, MaxFrameBody+1)...),
		"sender with a wildcard":   set(good, 10, '#'),
		"sender with a slash":      set(good, 10, '/'),
		"header count 255":         set(good, 33, 255),
		"answer status 0":          set(answer, len(answer)-4-1-1-2, 0, 0),
		"answer status 700":        set(answer, len(answer)-4-1-1-2, 0x02, 0xbc),
		"id not UTF-8":             set(good, 7, 0xff),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := parseFrame(b)
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("parseFrame = %+v, %v; want ErrFrame", f, err)
			}
		})
	}
	if _, err := parseFrame(answer); err != nil {
		t.Fatalf("a good answer refused: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		_, _ = parseFrame(cases["body length 4 GiB"])
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 100; per > 4096 {
		t.Errorf("refusing a 4 GiB declared body allocated %d bytes", per)
	}
}

func TestAppendFrameRefuses(t *testing.T) {
	for name, f := range map[string]*frame{
		"no id":          {typ: frameRequest, from: "a"},
		"bad sender":     {typ: frameRequest, id: "x", from: "a/b"},
		"type 0":         {id: "x", from: "a"},
		"too many heads": {typ: frameRequest, id: "x", from: "a", header: manyHeaders(17)},
		"long value":     {typ: frameRequest, id: "x", from: "a", header: map[string]string{"k": strings.Repeat("v", 1025)}},
	} {
		if _, err := appendFrame(nil, f); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: %v, want ErrFrame", name, err)
		}
	}
}

func manyHeaders(n int) map[string]string {
	h := map[string]string{}
	for i := range n {
		h[string(rune('a'+i))] = "v"
	}
	return h
}

// FuzzParseFrame: any input is refused or decodes to a frame that encodes
// back to the same bytes (header order aside: one header at most in the
// seeds' round trip check).
func FuzzParseFrame(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/frames/*.bin")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	good, _ := appendFrame(nil, knownRequest)
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := parseFrame(b)
		if err != nil {
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("error without ErrFrame: %v", err)
			}
			return
		}
		again, err := appendFrame(nil, fr)
		if err != nil {
			t.Fatalf("a decoded frame does not encode: %v", err)
		}
		back, err := parseFrame(again)
		if err != nil || !sameFrame(back, fr) {
			t.Fatalf("round trip: %+v %v, want %+v", back, err, fr)
		}
		if len(fr.header) <= 1 && !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, want %x", again, b)
		}
	})
}

func BenchmarkParseFrame(b *testing.B) {
	env := bytes.Repeat([]byte("x"), 600) // a typical signed envelope
	raw, _ := appendFrame(nil, &frame{typ: frameRequest, id: "0123456789abcdef", from: "plant-a_gw_7f3a2c",
		ctype: "application/json", header: map[string]string{"X-Synapse-Seq": "1234", "X-Synapse-Seq-Prev": "1233"}, body: env})
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseFrame(raw); err != nil {
			b.Fatal(err)
		}
	}
}
