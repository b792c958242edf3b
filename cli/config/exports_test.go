package config_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
)

// TestExportsConfig: the exports list and global cap load (the
// contract's names), tokens come from their variables, and the checks
// that tie exports to the rest of the file fail with the field named.
func TestExportsConfig(t *testing.T) {
	env := func(k string) string { return map[string]string{"CLOUD_TOKEN": "tok"}[k] }
	f, err := config.Load(writeConfig(t, `{"exports": [
		{"name": "cloud", "endpoint": "wss://cloud.example:8443", "token_env": "CLOUD_TOKEN",
		 "routines": ["synapse.telemetry"], "priority": 1, "order": "live_first",
		 "bandwidth_bytes_per_s": 50000, "start": "new"},
		{"name": "site", "endpoint": "mqtt://", "priority": 5, "start": "all"}],
		"mqtt": {"url": "mqtt://127.0.0.1:1883"},
		"tier1": {"export_bandwidth_bytes_per_s": 100000}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Exports) != 2 || f.Exports[0].Token != "tok" || f.Exports[0].BandwidthBytesPerS != 50000 || f.Exports[1].Start != "all" ||
		f.Tier1.ExportBandwidthBytesPerS != 100000 {
		t.Errorf("loaded %+v, tier1 cap %d", f.Exports, f.Tier1.ExportBandwidthBytesPerS)
	}
	for _, c := range []struct{ body, says string }{
		{`{"exports": [{"name": "site", "endpoint": "mqtt://"}]}`, "exports[0].endpoint"},
		{`{"uplink": {"endpoint": "http://127.0.0.1:1"}, "exports": [{"name": "uplink", "endpoint": "http://127.0.0.1:2"}]}`, "exports[0].name"},
		{`{"exports": [{"name": "x", "endpoint": "http://h:1", "priority": 0.5}]}`, "priority"},
		{`{"exports": [{"name": "x", "endpoint": "http://h:1", "bandwdith_bytes_per_s": 5}]}`, "bandwdith_bytes_per_s"},
		{`{"tier1": {"export_bandwidth_bytes_per_s": -1}}`, "tier1.export_bandwidth_bytes_per_s"},
		{`{"exports": [{"name": "x", "endpoint": "http://h:1", "compression": "brotli"}]}`, `exports[0].compression: "brotli" must be auto, off, gzip or deflate`},
		{`{"exports": [{"name": "x", "endpoint": "ws://h:1", "compression": "gzip"}]}`, "exports[0].compression"},
		{`{"exports": [{"name": "x", "endpoint": "http://h:1", "compression": true}]}`, "compression"},
	} {
		if _, err := config.Load(writeConfig(t, c.body), env); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error naming %s", c.body, err, c.says)
		}
	}
}
