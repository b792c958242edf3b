package httpapi_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"net/http"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/bodycodec"
	"github.com/synapse-edge/synapse/wire"
)

// TestTier1ContentEncoding: the ingest route takes gzip and deflate
// bodies, says so in every answer (Accept-Encoding), and refuses a bomb
// (413), a truncated or corrupt stream (400) and an unknown coding (415)
// without storing a frame of them.
func TestTier1ContentEncoding(t *testing.T) {
	const limit = 64 << 10
	ts := startTier1Server(t, func(c *tier1.Config) { c.MaxBatchBytes = limit })
	now := time.Now().UnixNano()
	var enc bodycodec.Encoder
	post := func(body []byte, coding string) *reply {
		opts := []reqOpt{withMsgpack()}
		if coding != "" {
			opts = append(opts, withHeader("Content-Encoding", coding))
		}
		return ts.do(t, "POST", api("/tier1/synapse.telemetry"), body, opts...)
	}
	stored := 0
	for i, c := range []string{bodycodec.Gzip, bodycodec.Deflate, ""} {
		plain := telemetryBatch("c"+c, "dev"+c, i*100, 50, now)
		body := plain
		if c != "" {
			body, _ = enc.Encode(nil, c, plain)
			if len(body) >= len(plain) {
				t.Errorf("%s: %d bytes from %d", c, len(body), len(plain))
			}
		}
		r := post(body, c)
		r.wantStatus(t, http.StatusOK)
		if got := r.header.Get("Accept-Encoding"); got != bodycodec.Accepted {
			t.Errorf("%q: Accept-Encoding %q, want %q", c, got, bodycodec.Accepted)
		}
		stored += 50
	}
	if got := len(ts.frames(t, "")); got != stored {
		t.Fatalf("stored %d frames, want %d", got, stored)
	}

	good, _ := enc.Encode(nil, bodycodec.Gzip, telemetryBatch("bad", "x", 0, 50, now))
	var bomb bytes.Buffer
	w, _ := gzip.NewWriterLevel(&bomb, flate.BestCompression)
	_, _ = w.Write(bytes.Repeat(telemetryBatch("bomb", "x", 0, 1, now), 1<<20/40)) // about 100 MiB
	_ = w.Close()
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	for _, c := range []struct {
		name   string
		body   []byte
		coding string
		status int
		code   wire.ErrorCode
	}{
		{"gzip bomb", bomb.Bytes(), "gzip", 413, wire.CodePayloadTooLarge},
		{"truncated", good[:len(good)/2], "gzip", 400, wire.CodeMessageFormatInvalid},
		{"corrupt", flipped, "gzip", 400, wire.CodeMessageFormatInvalid},
		{"gzip sent as deflate", good, "deflate", 400, wire.CodeMessageFormatInvalid},
		{"unknown coding", good, "br", 415, wire.CodeUnsupportedMedia},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "gzip bomb" && bomb.Len() > limit/4 {
				t.Fatalf("the bomb is %d bytes, not small", bomb.Len())
			}
			r := post(c.body, c.coding)
			r.wantError(t, c.status, c.code)
			if got := r.header.Get("Accept-Encoding"); got != bodycodec.Accepted {
				t.Errorf("Accept-Encoding %q in a refusal", got)
			}
			t.Logf("%d bytes: %s", len(c.body), r.body)
		})
	}
	if got := len(ts.frames(t, "")); got != stored {
		t.Errorf("stored %d frames after the bad bodies, want %d", got, stored)
	}
}
