package reload_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// openAgent is an opened agent on a temporary data directory.
func openAgent(t *testing.T) *agent.Agent {
	t.Helper()
	a, err := agent.New(tasktest.Config(t), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	return a
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadConcurrent runs reloads of a good and a bad file, and reads
// of the status, at once (under -race): each reload is whole, the
// agent's limit is one the good file set, and the level follows the
// file's log_level.
func TestReloadConcurrent(t *testing.T) {
	a := openAgent(t)
	path := filepath.Join(t.TempDir(), "synapse.json")
	write(t, path, `{"max_concurrent_tasks": 7, "log_level": "debug", "http": {"max_body_bytes": 4096}}`)
	// As serve's flags do: the data directory and the name are the
	// agent's, whatever the file says.
	flags := func(f *config.File) { f.DataDir, f.AgentName = a.Config().DataDir, a.Config().AgentName }
	running := config.Defaults()
	flags(&running)
	level := new(slog.LevelVar)
	r := reload.New(a, slog.New(slog.DiscardHandler), reload.Options{Path: path, Running: running, Level: level, Flags: flags})

	res := r.Reload(context.Background(), "api")
	if res.Result != wire.ReloadOK || !slices.Equal(res.Applied, []string{"log_level", "max_concurrent_tasks"}) ||
		!slices.Equal(res.RestartRequired, []string{"http.max_body_bytes"}) {
		t.Fatalf("reload: %+v", res)
	}
	if a.Config().MaxConcurrentTasks != 7 || level.Level() != slog.LevelDebug || a.Config().DataDir != running.DataDir {
		t.Fatalf("after the reload: %d tasks, level %v", a.Config().MaxConcurrentTasks, level.Level())
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	write(t, bad, `{"max_concurrent_tasks": 0}`)
	rb := reload.New(a, slog.New(slog.DiscardHandler), reload.Options{Path: bad, Running: running, Level: level, Flags: flags})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			rl := r
			if i%2 == 1 {
				rl = rb
			}
			res := rl.Reload(context.Background(), "api")
			if st := rl.Status(); st.LastReload == nil {
				t.Errorf("no last reload in %+v", st)
			}
			if (res.Result == wire.ReloadOK) != (rl == r) {
				t.Errorf("reload %d: %+v", i, res)
			}
		})
	}
	wg.Wait()
	if got := a.Config().MaxConcurrentTasks; got != 7 {
		t.Errorf("max_concurrent_tasks = %d, want 7 (the bad file changes nothing)", got)
	}
}

// TestLevelFlag: with --log-level given, the file's log_level changes
// nothing and is not reported as applied.
func TestLevelFlag(t *testing.T) {
	a := openAgent(t)
	path := filepath.Join(t.TempDir(), "synapse.json")
	write(t, path, `{"log_level": "debug"}`)
	flags := func(f *config.File) { f.DataDir, f.AgentName = a.Config().DataDir, a.Config().AgentName }
	running := config.Defaults()
	flags(&running)
	level := new(slog.LevelVar)
	level.Set(slog.LevelWarn)
	r := reload.New(a, slog.New(slog.DiscardHandler), reload.Options{Path: path, Running: running, Level: level, LevelFlag: true, Flags: flags})
	if res := r.Reload(context.Background(), "sighup"); res.Result != wire.ReloadOK || len(res.Applied) != 0 || len(res.RestartRequired) != 0 {
		t.Errorf("reload: %+v, want ok with nothing applied", res)
	}
	if level.Level() != slog.LevelWarn {
		t.Errorf("level %v, want warn (the flag's)", level.Level())
	}
}

// TestREADMETable checks that the README's table of what a reload
// applies names as live exactly LiveFields.
func TestREADMETable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n### Reloading without a restart\n")
	section, _, _ = strings.Cut(section, "\n### ")
	if !ok {
		t.Fatal("README has no section Reloading without a restart")
	}
	var live []string
	name := regexp.MustCompile("^`([a-z0-9_.\\[\\]]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[2]), "live") {
			continue
		}
		for _, f := range strings.Split(cells[1], ",") {
			if m := name.FindStringSubmatch(strings.TrimSpace(f)); m != nil {
				live = append(live, m[1])
			}
		}
	}
	slices.Sort(live)
	want := slices.Sorted(slices.Values(reload.LiveFields))
	if !slices.Equal(live, want) {
		t.Errorf("README's live fields %v, want %v", live, want)
	}
}

// TestReloadTier1: a reload sets tier 1's live fields on the service
// serve runs (Options.Tier1) and keeps its others, which it names as
// needing a restart; the exports get the global cap of the file.
func TestReloadTier1(t *testing.T) {
	a := openAgent(t)
	path := filepath.Join(t.TempDir(), "synapse.json")
	write(t, path, `{"tier1": {"retention_hours": 5, "max_bytes_per_routine": 2000, "export_bandwidth_bytes_per_s": 300, "max_batch_bytes": 1000}}`)
	flags := func(f *config.File) { f.DataDir, f.AgentName = a.Config().DataDir, a.Config().AgentName }
	running := config.Defaults()
	flags(&running)
	t1, err := tier1.NewService(running.Tier1, tier1.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var global int64
	r := reload.New(a, slog.New(slog.DiscardHandler), reload.Options{Path: path, Running: running, Flags: flags, Tier1: t1,
		SetExportCaps: func(g int64, _ map[string]int64) { global = g }})
	res := r.Reload(context.Background(), "api")
	want := []string{"tier1.export_bandwidth_bytes_per_s", "tier1.max_bytes_per_routine", "tier1.retention_hours"}
	if res.Result != wire.ReloadOK || !slices.Equal(res.Applied, want) || !slices.Equal(res.RestartRequired, []string{"tier1.max_batch_bytes"}) {
		t.Fatalf("reload: %+v", res)
	}
	c := t1.Config()
	if c.RetentionHours != 5 || c.MaxBytesPerRoutine != 2000 || c.ExportBandwidthBytesPerS != 300 || c.MaxBatchBytes != running.Tier1.MaxBatchBytes {
		t.Errorf("tier1 in force %+v, want the file's live fields and the running max_batch_bytes", c)
	}
	if global != 300 {
		t.Errorf("exports' global cap %d, want 300", global)
	}
}
