package configcmd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/wire"
)

// TestReload runs synapse config reload against an agent of the built
// binary: an applied file, then a refused one, and the agent's health
// after each.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synapse.json")
	if err := os.WriteFile(path, []byte(`{"max_concurrent_tasks": 4}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := agenttest.Start(t, synapseBin.Path(t), agenttest.Options{Args: []string{"--config", path}})

	if err := os.WriteFile(path, []byte(`{"max_concurrent_tasks": 5, "max_file_size": 1000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := clitest.Must(t, a, "", "config", "reload")
	for _, want := range []string{"reloaded (config ", "applied: max_concurrent_tasks", "restart required: max_file_size"} {
		if !strings.Contains(out, want) {
			t.Errorf("config reload output lacks %q:\n%s", want, out)
		}
	}

	if err := os.WriteFile(path, []byte(`{"max_concurrent_tasks": 5, "log_level": "loud"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := clitest.At(t, a, "", "config", "reload")
	if code != cli.ExitFailure || !strings.Contains(out, "refused, nothing changed: 1 problem(s)") || !strings.Contains(out, `log_level: "loud"`) {
		t.Errorf("refused reload: exit %d\n%s%s", code, out, errOut)
	}
	h, err := client.New(a.URL, a.Token).Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.Config == nil || h.Config.LastReload == nil || h.Config.LastReload.Result != wire.ReloadInvalid || h.Config.File != path {
		t.Errorf("health after the refused reload: %+v", h.Config)
	}
}
