package export_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/tier1/export"
)

// TestCheck: every bad field of the exports list is named, all at once;
// good entries pass.
func TestCheck(t *testing.T) {
	var got []string
	export.Check([]export.Config{
		{Name: "cloud", Endpoint: "wss://cloud.example:8443", Routines: []string{"synapse.telemetry"}, Priority: 1, Order: "live_first", BandwidthBytesPerS: 50000, Start: "new"},
		{Name: "site", Endpoint: "mqtt://", Priority: 5, Start: "all"},
		{Name: "s2", Endpoint: "http://h:1", Start: "since", Since: "2026-12-01T00:00:00Z", BatchSize: 10, LingerMS: 50, Compression: "gzip"},
		{Name: "s3", Endpoint: "https://h:1", Compression: "deflate"},
		{Name: "s4", Endpoint: "ws://h:1", Compression: "off"},
		{Name: "cloud", Endpoint: "ftp://x", Priority: 11, Order: "newest", BandwidthBytesPerS: -1, Start: "later", BatchSize: 5000, LingerMS: -1, MaxBackoffMS: -1},
		{Name: "a/b", Endpoint: "http://", Start: "since", Since: "yesterday"},
		{Name: "", Endpoint: "ws://h", Since: "2026-12-01T00:00:00Z"},
		{Name: "z1", Endpoint: "http://h:1", Compression: "brotli"},
		{Name: "z2", Endpoint: "mqtt://", Compression: "gzip"},
	}, func(field, format string, args ...any) { got = append(got, field+": "+fmt.Sprintf(format, args...)) })
	want := []string{"exports[5].name", "exports[5].endpoint", "exports[5].priority", "exports[5].order", "exports[5].bandwidth_bytes_per_s",
		"exports[5].start", "exports[5].batch_size", "exports[5].linger_ms", "exports[5].max_backoff_ms",
		"exports[6].name", "exports[6].endpoint", "exports[6].since", "exports[7].name", "exports[7].since",
		"exports[8].compression", "exports[9].compression"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+": ") {
			t.Errorf("problem %d: %q, want one of %s", i, got[i], w)
		}
	}
}
