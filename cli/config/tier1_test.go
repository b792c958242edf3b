package config_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/tier1"
)

// topKeys are the top-level keys of the JSON object raw, in order.
func topKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestFileJSONOrder: the tier1 and uplink sections are the File's, not
// the agent's, yet a File is written in the order it was written in when
// they were the agent's: after retention, before outbound.
func TestFileJSONOrder(t *testing.T) {
	f := config.Defaults()
	f.AgentName = "gw<1>"
	f.Uplink = &tier1.UplinkConfig{Endpoint: "ws://10.0.0.2:8080", TokenEnv: "UP"}
	f.LogLevel = "debug"
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agent_name", "system_id", "data_dir", "listen", "max_concurrent_tasks", "max_task_duration_seconds", "max_file_size",
		"max_parked_tasks", "retention", "tier1", "uplink", "outbound", "negotiation", "store", "log_level", "http", "hil", "a2a", "p2p", "limits"}
	if got := topKeys(t, raw); !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	// As json.Marshal escapes <, > and & and an encoder that does not
	// leaves them.
	if !strings.Contains(string(raw), `"agent_name":"gw\u003c1\u003e"`) {
		t.Errorf("json.Marshal: %s", raw)
	}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(f); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"agent_name":"gw<1>"`) {
		t.Errorf("Encoder without HTML escaping: %s", buf.String())
	}
	var back config.File
	if err := json.Unmarshal(raw, &back); err != nil || back.Uplink == nil || back.Uplink.Endpoint != f.Uplink.Endpoint || back.Tier1.MaxBatchBytes != f.Tier1.MaxBatchBytes {
		t.Errorf("decoded again: %v, %+v", err, back)
	}
}

// TestValidateAgentOrder: the problems of the tier1 and uplink sections
// come after the agent's top-level ones and before those of outbound and
// negotiation, as when agent.Config held these sections.
func TestValidateAgentOrder(t *testing.T) {
	f := config.Defaults()
	f.Listen = "nope"
	f.Tier1.RetentionHours = 0
	f.Uplink = &tier1.UplinkConfig{Endpoint: "ftp://x"}
	f.Outbound.Allow = []string{"bad range"}
	f.Negotiation.MaxSecurityLevel = "bogus"
	err := f.ValidateAgent(f.Config)
	if err == nil {
		t.Fatal("no error")
	}
	var fields []string
	for _, l := range strings.Split(err.Error(), "\n") {
		field, _, _ := strings.Cut(strings.TrimPrefix(l, "config: "), ":")
		fields = append(fields, field)
	}
	want := []string{"listen", "tier1.retention_hours", "uplink.endpoint", "outbound.allow[0]", "negotiation.max_security_level"}
	if !slices.Equal(fields, want) {
		t.Errorf("problems of %v, want %v:\n%v", fields, want, err)
	}
	f = config.Defaults()
	f.Tier1.MaxBatchBytes = 0
	if err := f.ValidateAgent(f.Config); err == nil || err.Error() != "config: tier1.max_batch_bytes: must be at least 1" {
		t.Errorf("ValidateAgent: %v", err)
	}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "tier1.max_batch_bytes") {
		t.Errorf("Validate: %v", err)
	}
}
