package main_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestCompressionStandIns: the go.mod replaces fasthttp's compression
// libraries (internal/stdcompress, internal/nobrotli). Through fasthttp,
// gzip and deflate still work and are the standard formats (the standard
// library reads what fasthttp writes, and fasthttp what it writes);
// brotli and zstd, which the agent neither serves nor decodes, fail
// instead of producing anything.
func TestCompressionStandIns(t *testing.T) {
	body := []byte(strings.Repeat(`{"task_type":"echo","payload":{"msg":"hi"}}`, 100))

	gz := fasthttp.AppendGzipBytes(nil, body)
	if len(gz) >= len(body) {
		t.Errorf("gzip: %d bytes from %d, want smaller", len(gz), len(body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatalf("compress/gzip reading fasthttp's gzip: %v", err)
	}
	if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, body) {
		t.Errorf("compress/gzip read %d bytes, %v; want the %d-byte body", len(got), err, len(body))
	}
	var std bytes.Buffer
	zw := gzip.NewWriter(&std)
	_, _ = zw.Write(body)
	_ = zw.Close()
	if got, err := fasthttp.AppendGunzipBytes(nil, std.Bytes()); err != nil || !bytes.Equal(got, body) {
		t.Errorf("fasthttp gunzip of compress/gzip's output: %d bytes, %v", len(got), err)
	}

	fl := fasthttp.AppendDeflateBytes(nil, body)
	fr, err := zlib.NewReader(bytes.NewReader(fl))
	if err != nil {
		t.Fatalf("compress/zlib reading fasthttp's deflate: %v", err)
	}
	if got, err := io.ReadAll(fr); err != nil || !bytes.Equal(got, body) {
		t.Errorf("compress/zlib read %d bytes, %v; want the %d-byte body", len(got), err, len(body))
	}
	if got, err := fasthttp.AppendInflateBytes(nil, fl); err != nil || !bytes.Equal(got, body) {
		t.Errorf("fasthttp inflate of its deflate: %d bytes, %v", len(got), err)
	}

	if got, err := fasthttp.AppendUnzstdBytes(nil, []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}); err == nil {
		t.Errorf("zstd decoded %q: want an error (not built in)", got)
	}
	if got, err := fasthttp.AppendUnbrotliBytes(nil, []byte{0x0b, 0x02, 0x80}); err == nil {
		t.Errorf("brotli decoded %q: want an error (not built in)", got)
	}
}
