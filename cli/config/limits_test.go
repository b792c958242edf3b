package config_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
)

func noEnv(string) string { return "" }

// TestLimitsMemoryBudget: limits.memory_mb gives tier1.max_inflight_bytes
// its default (memory_mb/8 less 512 KiB); a file that sets max_inflight_bytes keeps
// its value; a bad memory_mb is refused by name.
func TestLimitsMemoryBudget(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		mb         int
		inflight   int64
	}{
		{"no file", "", 16, 1536 << 10},
		{"empty file", `{}`, 16, 1536 << 10},
		{"memory_mb", `{"limits": {"memory_mb": 64}}`, 64, 7680 << 10},
		{"explicit in-flight budget", `{"limits": {"memory_mb": 64}, "tier1": {"max_inflight_bytes": 1048576}}`, 64, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = writeConfig(t, tc.file)
			}
			f, err := config.Load(path, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Limits.MB(); got != tc.mb {
				t.Errorf("memory_mb %d, want %d", got, tc.mb)
			}
			if got := f.Tier1.MaxInflightBytes; got != tc.inflight {
				t.Errorf("tier1.max_inflight_bytes %d, want %d", got, tc.inflight)
			}
			if err := f.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	if d := config.Defaults(); d.Tier1.MaxInflightBytes != 1536<<10 {
		t.Errorf("Defaults: tier1.max_inflight_bytes %d, want the default budget's 1.5 MiB", d.Tier1.MaxInflightBytes)
	}
	_, err := config.Load(writeConfig(t, `{"limits": {"memory_mb": 4}}`), noEnv)
	if err == nil || !strings.Contains(err.Error(), "limits.memory_mb") {
		t.Fatalf("memory_mb 4: got %v, want an error naming limits.memory_mb", err)
	}
	errs := config.Check(writeConfig(t, `{"limits": {"memory_mb": 4}}`), noEnv)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "limits.memory_mb") {
		t.Fatalf("config check of memory_mb 4: %v, want one problem, limits.memory_mb", errs)
	}
	if _, err := config.Load(writeConfig(t, `{"limits": {"memory": 16}}`), noEnv); err == nil {
		t.Fatal("an unknown field of limits was accepted")
	}
}
