package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
)

// faultyServer opens a test server whose store fails each commit while
// the returned flag is set, with text as the error: before the commit
// (nothing stored), or, with synced, as its fdatasync failing after the
// write reached the file (the outcome unknown).
func faultyServer(t *testing.T, synced bool, text string) (*testServer, *atomic.Bool) {
	failing := new(atomic.Bool)
	fault := func() error {
		if failing.Load() {
			return errors.New(text)
		}
		return nil
	}
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = adminToken
	opts := agent.Options{StoreFault: fault}
	if synced {
		opts = agent.Options{StoreSyncFault: fault}
	}
	ts := &testServer{t: t, cfg: cfg, opts: opts}
	ts.open()
	t.Cleanup(ts.stop)
	return ts, failing
}

// TestHealthNotServing: GET /health answers 503 NOT_SERVING while the
// store cannot commit (an injected disk fault) and once the agent shuts
// down, and 200 SERVING again when commits succeed.
func TestHealthNotServing(t *testing.T) {
	ts, failing := faultyServer(t, false, "injected: no space left on device")

	health := func(t *testing.T, wantStatus int, want, reason string) {
		t.Helper()
		r := ts.do(t, "GET", api("/health"), nil)
		var h struct {
			Status, Version, Reason string
		}
		if err := json.Unmarshal(r.body, &h); err != nil || r.status != wantStatus || h.Status != want || h.Reason != reason || h.Version == "" {
			t.Errorf("GET /health = %d %s, want %d %s reason %q", r.status, r.body, wantStatus, want, reason)
		}
	}
	health(t, http.StatusOK, "SERVING", "")
	failing.Store(true)
	if r := ts.do(t, "POST", api("/task"), []byte(`{"task_type":"echo","payload":{}}`)); r.status/100 == 2 {
		t.Fatalf("a task was accepted while no commit succeeds: %d %s", r.status, r.body)
	}
	health(t, http.StatusServiceUnavailable, "NOT_SERVING", "store_failing")
	failing.Store(false)
	ts.submit(t, `{"task_type":"echo","payload":{}}`)
	health(t, http.StatusOK, "SERVING", "")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	health(t, http.StatusServiceUnavailable, "NOT_SERVING", "shutting_down")
}
