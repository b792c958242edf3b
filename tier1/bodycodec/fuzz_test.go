package bodycodec_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/synapse-edge/synapse/tier1/bodycodec"
)

// FuzzDecode: any body in either coding is decoded within the limit or
// refused with one of the package's errors, never a panic, never more
// than the limit; what decodes encodes and decodes back to itself.
func FuzzDecode(f *testing.F) {
	var e bodycodec.Encoder
	for _, s := range []string{"", "x", "\x92\xb1synapse.telemetry\x90", string(bytes.Repeat([]byte("frame"), 400))} {
		for _, c := range []string{bodycodec.Gzip, bodycodec.Deflate} {
			z, _ := e.Encode(nil, c, []byte(s))
			f.Add(c == bodycodec.Gzip, z)
		}
	}
	f.Fuzz(func(t *testing.T, gz bool, body []byte) {
		c := bodycodec.Deflate
		if gz {
			c = bodycodec.Gzip
		}
		const limit = 64 << 10
		out, err := bodycodec.Decode(c, body, limit)
		if err != nil {
			if out != nil || !(errors.Is(err, bodycodec.ErrCorrupt) || errors.Is(err, bodycodec.ErrTooLarge)) {
				t.Fatalf("%s: %v with %d bytes", c, err, len(out))
			}
			return
		}
		if len(out) > limit {
			t.Fatalf("%d bytes past the limit", len(out))
		}
		z, err := e.Encode(nil, c, out)
		if err != nil {
			t.Fatal(err)
		}
		back, err := bodycodec.Decode(c, z, limit)
		if err != nil || !bytes.Equal(back, out) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
