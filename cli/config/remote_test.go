package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
)

// TestOverlay: a remote config fragment decoded over the file merges
// into its sections key by key and replaces values and arrays; its hash
// is the file's, a NUL and the fragment's; unknown and locked keys are
// problems; a nil fragment is the file alone.
func TestOverlay(t *testing.T) {
	path := writeConfig(t, `{"max_concurrent_tasks": 4, "tier1": {"retention_hours": 5, "max_bytes_per_routine": 1000},
		"approvals": [{"task_type": "a"}, {"task_type": "b"}],
		"handlers": [{"task_type": "t", "command": ["./run"]}]}`)
	env := func(string) string { return "" }
	file, _ := os.ReadFile(path)
	frag := []byte(`{"tier1": {"max_bytes_per_routine": 2000}, "approvals": [{"task_type": "c"}], "handlers": [{"task_type": "u", "command": ["./other"]}]}`)
	f, hash, errs := config.ReadOverlaid(path, frag, env)
	if len(errs) > 0 {
		t.Fatalf("problems: %v", errs)
	}
	if f.MaxConcurrentTasks != 4 || f.Tier1.RetentionHours != 5 || f.Tier1.MaxBytesPerRoutine != 2000 {
		t.Errorf("merged %+v: want max_concurrent_tasks 4 and retention_hours 5 from the file, max_bytes_per_routine 2000", f.Tier1)
	}
	if len(f.Approvals) != 1 || f.Approvals[0].TaskType != "c" {
		t.Errorf("approvals %+v, want the fragment's array in place of the file's", f.Approvals)
	}
	if len(f.Commands) != 1 || !strings.HasSuffix(f.Commands[0].Command[0], "/other") || !strings.HasPrefix(f.Commands[0].Command[0], "/") {
		t.Errorf("handlers %+v, want the fragment's, its relative command made relative to the file", f.Commands)
	}
	if want := config.OverlaidHash(file, frag); hash != want || hash == config.OverlaidHash(file, nil) {
		t.Errorf("hash %s, want %s (not the file's)", hash, want)
	}
	if _, h, errs := config.ReadOverlaid(path, nil, env); len(errs) > 0 || h != config.OverlaidHash(file, nil) {
		t.Errorf("no fragment: %s, %v", h, errs)
	}
	lf, lh, err := config.LoadOverlaid(path, frag, env)
	if err != nil || lh != hash || lf.Tier1.MaxBytesPerRoutine != 2000 {
		t.Errorf("LoadOverlaid: %v, %s, %+v: want what ReadOverlaid read", err, lh, lf.Tier1)
	}
	for _, c := range []struct{ name, frag, want string }{
		{"unknown key", `{"max_concurent_tasks": 3}`, "unknown key"},
		{"bad value", `{"max_concurrent_tasks": -3}`, "max_concurrent_tasks"},
		{"wrong type", `{"tier1": {"retention_hours": "x"}}`, "retention_hours"},
		{"locked agent_id", `{"agent_id": "other"}`, "agent_id may not be set remotely"},
		{"locked mqtt", `{"mqtt": {"url": "mqtt://127.0.0.1:1"}}`, "mqtt may not be set remotely"},
		{"locked remote_config", `{"remote_config": {"operator_keys": []}}`, "remote_config may not be set remotely"},
		{"not an object", `[1]`, "remote config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, errs := config.ReadOverlaid(path, []byte(c.frag), env)
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), c.want) {
				t.Errorf("problems %v, want one naming %q", errs, c.want)
			}
		})
	}
}

// TestRemoteSection: operator keys must be base64 Ed25519 keys, at least
// one, each once, and the section needs mqtt.
func TestRemoteSection(t *testing.T) {
	const key = "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w="
	mq := `"mqtt": {"url": "mqtt://127.0.0.1:1883"}, `
	for _, c := range []struct{ name, body, want string }{
		{"good", `{` + mq + `"remote_config": {"operator_keys": ["` + key + `"]}}`, ""},
		{"no key", `{` + mq + `"remote_config": {"operator_keys": []}}`, "at least one operator key"},
		{"not base64", `{` + mq + `"remote_config": {"operator_keys": ["nope!"]}}`, "operator_keys[0]"},
		{"short", `{` + mq + `"remote_config": {"operator_keys": ["AAAA"]}}`, "operator_keys[0]"},
		{"twice", `{` + mq + `"remote_config": {"operator_keys": ["` + key + `", "` + key + `"]}}`, "operator_keys[1]: the same key twice"},
		{"no mqtt", `{"remote_config": {"operator_keys": ["` + key + `"]}}`, "needs the mqtt section"},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := config.Check(writeConfig(t, c.body), func(string) string { return "" })
			got := ""
			for _, e := range errs {
				got += e.Error() + "\n"
			}
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("problems %q, want %q", got, c.want)
			}
		})
	}
}
