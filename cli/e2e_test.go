package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// TestE2EBinary builds the real binary and runs it: "synapse serve" and the
// commands as processes. (The end-to-end tests of each command, through
// cli.Main in the test process, are in its package: cli/taskcmd, ...) It
// skips while the binary does not build.

var synapseBin agenttest.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	synapseBin.Cleanup()
	os.Exit(code)
}

// TestE2EBinary runs the built binary itself: main's wiring, the exit
// codes and the environment variables.
func TestE2EBinary(t *testing.T) {
	bin := synapseBin.Path(t)
	a := agenttest.Start(t, bin, agenttest.Options{})
	run := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := agenttest.Command(bin, args...)
		cmd.Env = append(os.Environ(), "SYNAPSE_AGENT=", "SYNAPSE_TOKEN=", "SYNAPSE_ADMIN_TOKEN=")
		cmd.Env = append(cmd.Env, env...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errOut.String()
	}
	code, out, _ := run(nil, "version")
	if want := regexp.MustCompile(`^synapse \S+ ` + runtime.GOOS + `/` + runtime.GOARCH + ` go\S+\n$`); code != 0 || !want.MatchString(out) {
		t.Errorf("version: exit %d, %q", code, out)
	}
	if code, _, errOut := run(nil, "frobnicate"); code != 2 || !strings.Contains(errOut, "Usage:") {
		t.Errorf("unknown command: exit %d, stderr %q; want 2 and usage", code, errOut)
	}
	env := []string{"SYNAPSE_AGENT=" + a.URL, "SYNAPSE_ADMIN_TOKEN=" + a.Token}
	if code, out, errOut := run(env, "task", "submit", "echo", "--payload", `{"via":"env"}`, "--wait", "10s"); code != 0 || !strings.Contains(out, `"via": "env"`) {
		t.Errorf("submit via env: exit %d\n%s\n%s", code, out, errOut)
	}
	// The token file in the data directory is the last resort.
	tokenDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(tokenDir, "admin.token"), []byte(a.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run([]string{"SYNAPSE_AGENT=" + a.URL}, "token", "list", "--data", tokenDir); code != 0 {
		t.Errorf("token from admin.token: exit %d, %s", code, errOut)
	}
	if code, _, errOut := run([]string{"SYNAPSE_AGENT=" + a.URL}, "token", "list", "--data", t.TempDir()); code != 1 || !strings.Contains(errOut, "no token found") {
		t.Errorf("no token: exit %d, stderr %q; want 1 and a hint", code, errOut)
	}
}
