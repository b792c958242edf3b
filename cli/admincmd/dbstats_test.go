package admincmd_test

import (
	"math"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// db stats reads the running agent's store counters, and a stopped
// agent's file and commit log.
func TestE2EDBStats(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	for range 3 {
		clitest.Must(t, a, "", "task", "submit", "echo", "--wait", "10s")
	}
	type statsOut struct {
		Source         string
		Writes         uint64
		Commits        uint64
		BytesWritten   uint64  `json:"bytes_written"`
		BytesPerWrite  float64 `json:"bytes_per_write"`
		Fsyncs         uint64
		WritesPerFsync float64 `json:"writes_per_fsync"`
		LogBytes       uint64  `json:"log_bytes"`
		LogPending     *uint64 `json:"log_pending_bytes"`
		Log            *struct{ Checkpoint uint64 }
		Beyond         *uint64 `json:"log_records_beyond_checkpoint"`
	}
	res := clitest.Decode[statsOut](t, clitest.Must(t, a, "", "db", "stats", "--json"))
	if res.Source != "agent" || res.Writes < 3 || res.Commits == 0 || res.Fsyncs == 0 || res.LogBytes == 0 || res.LogPending == nil {
		t.Fatalf("stats = %+v, want the agent's counters after 3 tasks", res)
	}
	if res.BytesWritten < res.LogBytes || math.Abs(res.BytesPerWrite-float64(res.BytesWritten)/float64(res.Writes)) > 1 {
		t.Errorf("bytes written %d (log %d), per write %.1f over %d writes", res.BytesWritten, res.LogBytes, res.BytesPerWrite, res.Writes)
	}
	out := clitest.Must(t, a, "", "db", "stats")
	for _, k := range []string{"bytes per write", "fsyncs per write", "writes per fsync", "log not checkpointed", "checkpoints"} {
		if clitest.KVValue(t, out, k) == "" {
			t.Errorf("db stats prints no %q:\n%s", k, out)
		}
	}
	if code := a.Stop(t); code != 0 {
		t.Fatalf("agent exit code after SIGTERM = %d\n%s", code, a.Logs())
	}
	// Stopped: the file and its log (a clean stop checkpointed it all).
	res = clitest.Decode[statsOut](t, clitest.Must(t, a, "", "db", "stats", "--data", a.DataDir, "--json"))
	if res.Source != "file" || res.Log == nil || res.Log.Checkpoint == 0 || res.Beyond == nil || *res.Beyond != 0 {
		t.Errorf("stats of the stopped agent's file = %+v (log %+v), want its checkpoint and nothing beyond it", res, res.Log)
	}
	if out := clitest.Must(t, a, "", "db", "stats", "--offline", "--data", a.DataDir); !strings.Contains(out, "beyond the checkpoint") {
		t.Errorf("offline stats:\n%s", out)
	}
}
