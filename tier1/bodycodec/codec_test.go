package bodycodec_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/synapse-edge/synapse/tier1/bodycodec"
)

func sample(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(8))
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	var e bodycodec.Encoder
	body := sample(10_000)
	for _, c := range []string{bodycodec.Gzip, bodycodec.Deflate} {
		z, err := e.Encode(nil, c, body)
		if err != nil {
			t.Fatal(err)
		}
		if len(z) >= len(body) {
			t.Errorf("%s: %d bytes from %d", c, len(z), len(body))
		}
		for range 2 { // the pooled readers and writers again
			got, err := bodycodec.Decode(c, z, len(body))
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%s: %v, %d bytes", c, err, len(got))
			}
		}
		if _, err := bodycodec.Decode(c, z, len(body)-1); !errors.Is(err, bodycodec.ErrTooLarge) {
			t.Errorf("%s one byte over the limit: %v, want ErrTooLarge", c, err)
		}
	}
	if got, err := bodycodec.Decode("", body, len(body)); err != nil || !bytes.Equal(got, body) {
		t.Errorf("identity: %v", err)
	}
	if _, err := bodycodec.Decode("br", body, len(body)); !errors.Is(err, bodycodec.ErrUnsupported) {
		t.Errorf("br: %v, want ErrUnsupported", err)
	}
}

// A gzip bomb: 1 GiB of zeros in about a megabyte (1,024 gzip members of
// a MiB each). Decode stops at the limit: it reads only a sliver of the
// compressed bytes and allocates about the limit.
func TestBomb(t *testing.T) {
	var one bytes.Buffer
	w, _ := gzip.NewWriterLevel(&one, flate.BestCompression)
	_, _ = w.Write(make([]byte, 1<<20))
	_ = w.Close()
	z := bytes.NewBuffer(bytes.Repeat(one.Bytes(), 1024))
	const limit = 1 << 20
	allocs := testing.AllocsPerRun(1, func() {
		_, err := bodycodec.Decode(bodycodec.Gzip, z.Bytes(), limit)
		if !errors.Is(err, bodycodec.ErrTooLarge) {
			t.Fatalf("bomb of %d bytes: %v, want ErrTooLarge", z.Len(), err)
		}
	})
	var ms1, ms2 runtimeMem
	ms1.read()
	_, err := bodycodec.Decode(bodycodec.Gzip, z.Bytes(), limit)
	ms2.read()
	t.Logf("bomb %d bytes: %v; %.0f allocs, %d bytes allocated", z.Len(), err, allocs, ms2.total-ms1.total)
	if ms2.total-ms1.total > 3*limit {
		t.Errorf("allocated %d bytes to refuse a bomb at a limit of %d", ms2.total-ms1.total, limit)
	}
}

func TestCorrupt(t *testing.T) {
	var e bodycodec.Encoder
	body := sample(5000)
	for _, c := range []string{bodycodec.Gzip, bodycodec.Deflate} {
		z, _ := e.Encode(nil, c, body)
		flip := bytes.Clone(z)
		flip[len(flip)/2] ^= 0xff
		tail := bytes.Clone(z)
		tail[len(tail)-1] ^= 0xff // the checksum
		for name, bad := range map[string][]byte{
			"truncated": z[:len(z)/2], "header only": z[:5], "empty": nil, "flipped": flip,
			"checksum": tail, "trailing garbage": append(bytes.Clone(z), "xyz"...), "plain": body,
		} {
			got, err := bodycodec.Decode(c, bad, 1<<20)
			if !errors.Is(err, bodycodec.ErrCorrupt) || got != nil {
				t.Errorf("%s %s: %v (%d bytes), want ErrCorrupt", c, name, err, len(got))
			}
		}
	}
}

func TestPick(t *testing.T) {
	for _, c := range []struct{ announced, want, got string }{
		{"", "auto", "identity"},
		{"gzip, deflate", "auto", "gzip"},
		{"deflate", "auto", "deflate"},
		{"gzip;q=0, deflate", "auto", "deflate"},
		{"gzip; q=0.5", "auto", "gzip"},
		{"GZIP", "gzip", "gzip"},
		{"gzip", "deflate", "identity"},
		{"*", "deflate", "deflate"},
		{"br", "auto", "identity"},
		{"identity", "auto", "identity"},
	} {
		if got := bodycodec.Pick(c.announced, c.want); got != c.got {
			t.Errorf("Pick(%q, %q) = %q, want %q", c.announced, c.want, got, c.got)
		}
	}
}
