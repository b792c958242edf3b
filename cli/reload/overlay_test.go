package reload_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/wire"
)

// TestOverlay: a fragment over the file is applied as a reload, with
// commit run once the whole is good and before it takes effect; a bad
// fragment, or a commit that fails, changes nothing; a later reload of
// the file keeps the fragment in force over it.
func TestOverlay(t *testing.T) {
	a := openAgent(t)
	path := filepath.Join(t.TempDir(), "synapse.json")
	write(t, path, `{"max_concurrent_tasks": 3}`)
	flags := func(f *config.File) { f.DataDir, f.AgentName = a.Config().DataDir, a.Config().AgentName }
	running, hash0, err := config.LoadHashed(path, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	flags(&running)
	r := reload.New(a, slog.New(slog.DiscardHandler), reload.Options{Path: path, Hash: hash0, Running: running, Flags: flags})
	start := a.Config().MaxConcurrentTasks
	commits := 0
	commit := func() error { commits++; return nil }

	if res := r.Overlay(context.Background(), "remote", 1, []byte(`{"max_concurrent_tasks": -1}`), commit); res.Result != wire.ReloadInvalid || commits != 0 {
		t.Errorf("bad fragment: %+v, %d commits; want invalid, no commit", res, commits)
	}
	failed := errors.New("disk full")
	if res := r.Overlay(context.Background(), "remote", 1, []byte(`{"max_concurrent_tasks": 9}`), func() error { return failed }); res.Result != wire.ReloadInvalid ||
		!slices.Contains(res.Problems, failed.Error()) {
		t.Errorf("failed commit: %+v, want invalid naming its error", res)
	}
	if got, st := a.Config().MaxConcurrentTasks, r.Status(); got != start || st.Hash != hash0 || st.RemoteVersion != 0 {
		t.Fatalf("after the refusals: max_concurrent_tasks %d, status %+v; want %d (unchanged) and the file's hash", got, st, start)
	}

	frag := []byte(`{"max_concurrent_tasks": 9, "max_file_size": 1234567}`)
	res := r.Overlay(context.Background(), "remote", 2, frag, commit)
	if res.Result != wire.ReloadOK || commits != 1 || !slices.Equal(res.Applied, []string{"max_concurrent_tasks"}) ||
		!slices.Equal(res.RestartRequired, []string{"max_file_size"}) {
		t.Fatalf("good fragment: %+v, %d commits", res, commits)
	}
	file, _ := os.ReadFile(path)
	if st := r.Status(); a.Config().MaxConcurrentTasks != 9 || st.RemoteVersion != 2 || st.Hash != config.OverlaidHash(file, frag) {
		t.Errorf("after the fragment: max_concurrent_tasks %d, status %+v", a.Config().MaxConcurrentTasks, st)
	}
	// The file changes and is reloaded: the fragment stays over it.
	write(t, path, `{"max_concurrent_tasks": 3, "max_parked_tasks": 50}`)
	res = r.Reload(context.Background(), "sighup")
	if res.Result != wire.ReloadOK || a.Config().MaxConcurrentTasks != 9 || a.Config().MaxParkedTasks != 50 {
		t.Errorf("reload of the file: %+v, max_concurrent_tasks %d (want 9, the fragment's), max_parked_tasks %d", res, a.Config().MaxConcurrentTasks, a.Config().MaxParkedTasks)
	}
}
