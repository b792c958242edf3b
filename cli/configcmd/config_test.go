package configcmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// writeFile writes body to a config file of its own and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckBroken checks eleven broken files: each problem is named, with
// its place in the file where the JSON itself is wrong, and the exit code
// is 1.
func TestCheckBroken(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		problems   int
		want       []string // substrings of the output
	}{
		{"syntax", "{\n  \"listen\": \"127.0.0.1:1\",,\n}", 1, []string{"config.json:2:27: invalid character ','"}},
		{"misspelt key", "{\n  \"max_concurent_tasks\": 4\n}", 1, []string{"config.json:2:3: unknown key \"max_concurent_tasks\""}},
		{"wrong type", "{\"tier1\": {\"max_batch_bytes\": \"big\"}}", 1, []string{"config.json:1:", "tier1.max_batch_bytes: a JSON string is not a int"}},
		{"two objects", `{} {}`, 1, []string{"more than one JSON value"}},
		{"listen", `{"listen": "nope"}`, 1, []string{`listen: "nope" is not HOST:PORT`}},
		{"limits", `{"max_concurrent_tasks": 0, "max_task_duration_seconds": -1}`, 2,
			[]string{"max_concurrent_tasks: 0 is outside 1..100000", "max_task_duration_seconds: must be at least 1"}},
		{"tier1", `{"tier1": {"max_batch_bytes": 0, "retention_hours": 0}}`, 2,
			[]string{"tier1.max_batch_bytes: must be at least 1", "tier1.retention_hours: must be at least 1"}},
		{"retention", `{"retention": {"max_age_hours": 0, "keep_finished": 0}}`, 2,
			[]string{"retention.max_age_hours", "retention.keep_finished"}},
		{"agent id", `{"agent_id": "a b/c"}`, 1, []string{"agent_id"}},
		{"log level", `{"log_level": "verbose"}`, 1, []string{`log_level: "verbose" is not debug, info, warn or error`}},
		{"uplink without broker", `{"uplink": {"endpoint": "mqtt://"}}`, 1, []string{"uplink.endpoint", "needs the mqtt section"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.body)
			code, out, errOut := clitest.Run(t, "", "config", "check", path)
			if code != cli.ExitFailure {
				t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if n := strings.Count(out, "\n  - "); n != tc.problems {
				t.Errorf("%d problems listed, want %d:\n%s", n, tc.problems, out)
			}
		})
	}
}

func TestCheckGood(t *testing.T) {
	path := writeFile(t, `{"listen": "127.0.0.1:9001", "max_concurrent_tasks": 8, "tier1": {"retention_hours": 24}}`)
	code, out, errOut := clitest.Run(t, "", "config", "check", path)
	if code != cli.ExitOK || out != path+": ok\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and \"ok\"", code, out, errOut)
	}
	code, out, _ = clitest.Run(t, "", "config", "check", "--json", path)
	var res struct {
		File     string   `json:"file"`
		OK       bool     `json:"ok"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != cli.ExitOK || !res.OK || res.File != path || res.Problems == nil || len(res.Problems) != 0 {
		t.Errorf("--json: exit %d, %+v (%v) from %q", code, res, err, out)
	}
}

func TestCheckEnvironment(t *testing.T) {
	// The environment counts, as for serve: a too short admin token.
	path := writeFile(t, `{}`)
	t.Setenv("SYNAPSE_MAX_CONCURRENT_TASKS", "many")
	code, out, _ := clitest.Run(t, "", "config", "check", path)
	if code != cli.ExitFailure || !strings.Contains(out, `SYNAPSE_MAX_CONCURRENT_TASKS="many" is not a whole number`) {
		t.Errorf("bad environment: exit %d, %q", code, out)
	}
}

func TestCheckMissingFile(t *testing.T) {
	code, out, _ := clitest.Run(t, "", "config", "check", filepath.Join(t.TempDir(), "absent.json"))
	if code != cli.ExitFailure || !strings.Contains(out, "no such file") {
		t.Errorf("missing file: exit %d, %q", code, out)
	}
	code, _, errOut := clitest.Run(t, "", "config", "check")
	clitest.WantUsage(t, code, "", errOut, "missing argument")
}

// TestCheckREADMEExample checks that the README's example config file (the
// first json block of its Configuration section) passes, as it says.
func TestCheckREADMEExample(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Configuration\n")
	if !ok {
		t.Fatal("README has no Configuration section")
	}
	_, block, ok := strings.Cut(section, "```json\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README's Configuration section has no json block")
	}
	path := writeFile(t, block)
	// The secrets the example names come from the environment.
	t.Setenv("PLANT_B_SECRET", "a-secret-shared-with-plant-b")
	if code, out, errOut := clitest.Run(t, "", "config", "check", path); code != cli.ExitOK {
		t.Errorf("README example: exit %d\n%s%s", code, out, errOut)
	}
}
