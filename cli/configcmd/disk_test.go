package configcmd_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// TestCheckDiskBudget: hostile tier-1 disk budgets (issue #29) are refused
// by synapse config check, each problem named by its field; a good one
// passes.
func TestCheckDiskBudget(t *testing.T) {
	for _, tc := range []struct {
		name, tier1 string
		want        []string // one per problem
	}{
		{"negative budget", `{"max_disk_bytes": -1, "min_free_bytes": -5}`,
			[]string{"tier1.max_disk_bytes: must not be negative", "tier1.min_free_bytes: must not be negative"}},
		{"budget below a batch", `{"max_disk_bytes": 1000}`,
			[]string{"tier1.max_disk_bytes: 1000 is less than tier1.max_batch_bytes (4194304): a batch could never fit"}},
		{"unknown policy", `{"quotas": [{"routine": "synapse.telemetry", "overflow": "overwrite"}]}`,
			[]string{`tier1.quotas[0].overflow: "overwrite": want "drop_oldest" (the default) or "reject_new"`}},
		{"unknown routine", `{"quotas": [{"routine": "nope.routine", "max_bytes": 10}]}`,
			[]string{`tier1.quotas[0].routine: no routine "nope.routine"`}},
		{"no routine", `{"quotas": [{"max_bytes": 10}]}`, []string{"tier1.quotas[0].routine: must name a routine"}},
		{"twice", `{"quotas": [{"routine": "synapse.telemetry"}, {"routine": "synapse.telemetry", "overflow": "reject_new"}]}`,
			[]string{`tier1.quotas[1].routine: "synapse.telemetry" has a quota already (quotas[0])`}},
		{"negative quota", `{"quotas": [{"routine": "synapse.telemetry", "max_bytes": -1}]}`,
			[]string{"tier1.quotas[0].max_bytes: must not be negative"}},
		{"quota over budget", `{"max_disk_bytes": 8388608, "quotas": [{"routine": "synapse.telemetry", "max_bytes": 9000000}]}`,
			[]string{"tier1.quotas[0].max_bytes: 9000000 is more than tier1.max_disk_bytes (8388608)"}},
		{"huge", `{"max_disk_bytes": 1e30}`, []string{"tier1.max_disk_bytes"}},
		{"misspelt key", `{"quotas": [{"routine": "synapse.telemetry", "overflw": "reject_new"}]}`, []string{`unknown key "overflw"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, `{"tier1": `+tc.tier1+`}`)
			code, out, errOut := clitest.Run(t, "", "config", "check", path)
			if code != cli.ExitFailure {
				t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\n  - "); n != len(tc.want) {
				t.Errorf("%d problems listed, want %d:\n%s", n, len(tc.want), out)
			}
		})
	}
	good := writeFile(t, `{"tier1": {"max_disk_bytes": 2147483648, "min_free_bytes": 268435456,
		"quotas": [{"routine": "synapse.telemetry", "max_bytes": 1073741824, "overflow": "drop_oldest"}]}}`)
	if code, out, errOut := clitest.Run(t, "", "config", "check", good); code != cli.ExitOK {
		t.Errorf("the issue's example: exit %d\n%s%s", code, out, errOut)
	}
}
