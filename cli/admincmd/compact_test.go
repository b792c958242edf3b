package admincmd_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// TestE2EDBCompact: db compact refuses the file of a running agent with
// the advice to stop it, compacts it once the agent is stopped, and the
// agent starts on the compacted file with its tasks.
func TestE2EDBCompact(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	for range 3 {
		clitest.Must(t, a, "", "task", "submit", "echo", "--wait", "10s")
	}
	code, _, errOut := clitest.At(t, a, "", "db", "compact", "--data", a.DataDir)
	if code != cli.ExitFailure || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, "stop it first") {
		t.Errorf("compact a served file: exit %d, stderr %q; want 1 and the advice to stop the agent", code, errOut)
	}
	a.Stop(t)
	type compactOut struct {
		Path        string
		BytesBefore int64 `json:"bytes_before"`
		BytesAfter  int64 `json:"bytes_after"`
		Records     int64
	}
	code, out, errOut := clitest.Run(t, "", "db", "compact", "--data", a.DataDir, "--json")
	if code != cli.ExitOK {
		t.Fatalf("db compact: exit %d, %s", code, errOut)
	}
	res := clitest.Decode[compactOut](t, out)
	if res.BytesAfter <= 0 || res.BytesAfter > res.BytesBefore || res.Records < 3 {
		t.Errorf("compact = %+v", res)
	}
	a.Start(t)
	if out := clitest.Must(t, a, "", "db", "check"); clitest.KVValue(t, out, "ok") != "true" || clitest.KVValue(t, out, "tasks") != "3" {
		t.Errorf("db check after compaction:\n%s", out)
	}
}
