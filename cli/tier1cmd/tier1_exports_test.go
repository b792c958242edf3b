package tier1cmd_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client/agenttest"
)

// TestE2ETier1Exports: synapse tier1 exports lists an agent's exports as
// a table and as JSON (the status route's names), and pauses and resumes
// one; an unknown name is an error.
func TestE2ETier1Exports(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // an upstream that is down
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(t.TempDir(), "config.json")
	conf := `{"exports":[{"name":"cloud","endpoint":"http://` + down + `","priority":1,"bandwidth_bytes_per_s":50000,"max_backoff_ms":200},
		{"name":"site","endpoint":"ws://` + down + `","priority":5,"start":"all","order":"fifo"}]}`
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	a := agenttest.Start(t, synapseBin.Path(t), agenttest.Options{Args: []string{"--config", cfg}})
	clitest.Must(t, a, "", "tier1", "send", "--frames", "100", "--batch", "10", "--http")

	out := clitest.Eventually(t, a, "cloud backing off with 100 frames waiting", func(out string) bool {
		return strings.Contains(out, "cloud") && strings.Contains(out, "backing_off") && strings.Contains(out, " 100 ")
	}, "tier1", "exports")
	if !strings.HasPrefix(out, "NAME") || !strings.Contains(out, "site") || !strings.Contains(out, "50.0kB") {
		t.Errorf("table:\n%s", out)
	}
	type entry struct {
		Name          string   `json:"name"`
		State         string   `json:"state"`
		Priority      int      `json:"priority"`
		BacklogFrames int      `json:"backlog_frames"`
		SentFrames    int      `json:"sent_frames"`
		DroppedFrames int      `json:"dropped_frames"`
		ETA           *float64 `json:"eta_seconds"`
		Oldest        *string  `json:"oldest_unsent_ts"`
	}
	st := clitest.Decode[struct{ Exports []entry }](t, clitest.Must(t, a, "", "tier1", "exports", "--json"))
	if len(st.Exports) != 2 || st.Exports[0].Name != "cloud" || st.Exports[0].Priority != 1 || st.Exports[0].BacklogFrames != 100 ||
		st.Exports[0].ETA != nil || st.Exports[0].Oldest == nil || st.Exports[1].Name != "site" {
		t.Errorf("--json: %+v", st.Exports)
	}

	if out := clitest.Must(t, a, "", "tier1", "exports", "pause", "cloud"); !strings.Contains(out, "cloud: paused") {
		t.Errorf("pause: %q", out)
	}
	st = clitest.Decode[struct{ Exports []entry }](t, clitest.Must(t, a, "", "tier1", "exports", "--json"))
	if st.Exports[0].State != "paused" {
		t.Errorf("after pause: %+v", st.Exports[0])
	}
	clitest.Must(t, a, "", "tier1", "exports", "resume", "cloud")
	code, _, errOut := clitest.At(t, a, "", "tier1", "exports", "pause", "nope")
	if code == cli.ExitOK || !strings.Contains(errOut, "nope") {
		t.Errorf("pause of an unknown export: exit %d, %q", code, errOut)
	}
	code, _, _ = clitest.At(t, a, "", "tier1", "exports", "stop", "cloud")
	if code == cli.ExitOK {
		t.Error("tier1 exports stop: exit 0")
	}
}
