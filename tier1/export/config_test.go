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
		{Name: "s2", Endpoint: "http://h:1", Start: "since", Since: "2026-12-01T00:00:00Z", BatchSize: 10, LingerMS: 50},
		{Name: "cloud", Endpoint: "ftp://x", Priority: 11, Order: "newest", BandwidthBytesPerS: -1, Start: "later", BatchSize: 5000, LingerMS: -1, MaxBackoffMS: -1},
		{Name: "a/b", Endpoint: "http://", Start: "since", Since: "yesterday"},
		{Name: "", Endpoint: "ws://h", Since: "2026-12-01T00:00:00Z"},
	}, func(field, format string, args ...any) { got = append(got, field+": "+fmt.Sprintf(format, args...)) })
	want := []string{"exports[3].name", "exports[3].endpoint", "exports[3].priority", "exports[3].order", "exports[3].bandwidth_bytes_per_s",
		"exports[3].start", "exports[3].batch_size", "exports[3].linger_ms", "exports[3].max_backoff_ms",
		"exports[4].name", "exports[4].endpoint", "exports[4].since", "exports[5].name", "exports[5].since"}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w+": ") {
			t.Errorf("problem %d: %q, want one of %s", i, got[i], w)
		}
	}
}
