package httpapi_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// TestCommitOutcomeUnknown (issue #28): when the fdatasync of a
// submission's commit fails after the task reached the file, the client
// is told 503 commit_outcome_unknown (numeric code, Retry-After, the
// idempotency key named as the safe retry), never "not stored"; the
// stored task is run once, not left confirmed; /health turns SERVING
// within 2 s of the fault clearing with no client write; the keyed retry
// finds exactly that one task; db check is clean.
func TestCommitOutcomeUnknown(t *testing.T) {
	ts, failing := faultyServer(t, true, "injected: fdatasync: input/output error")

	body := []byte(`{"task_type":"echo","payload":{"n":1}}`)
	key := withHeader("Idempotency-Key", "k-28")
	failing.Store(true)
	r := ts.do(t, "POST", api("/task"), body, key)
	e := r.object(t)["error"].(map[string]any)
	if r.status != http.StatusServiceUnavailable || e["code"] != string(wire.CodeCommitUnknown) || e["retriable"] != true {
		t.Fatalf("submit whose sync fails: %d %s, want 503 commit_outcome_unknown", r.status, r.body)
	}
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After on commit_outcome_unknown")
	}
	if d, _ := e["details"].(map[string]any); d["numeric_code"] != float64(wire.NumericStorage) {
		t.Errorf("details = %v, want numeric_code %d", e["details"], wire.NumericStorage)
	}
	if msg, _ := e["message"].(string); !strings.Contains(msg, "Idempotency-Key") {
		t.Errorf("message %q does not name the idempotency key as the safe retry", msg)
	}
	failing.Store(false)
	cleared := time.Now()
	for {
		h := ts.do(t, "GET", api("/health"), nil)
		if h.status == http.StatusOK {
			break
		}
		if time.Since(cleared) > 2*time.Second {
			t.Fatalf("/health %d %s more than 2 s after the fault cleared", h.status, h.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ids := ts.listIDs(t, "")
	if len(ids) != 1 {
		t.Fatalf("tasks stored = %v, want the one whose outcome was unknown", ids)
	}
	ts.waitStatus(t, ids[0], wire.StatusCompleted) // run, not left confirmed
	r = ts.do(t, "POST", api("/task"), body, key)
	if r.status/100 != 2 {
		t.Fatalf("keyed retry: %d %s", r.status, r.body)
	}
	if got := r.object(t)["task_id"]; got != ids[0] {
		t.Errorf("keyed retry found task %v, want %s", got, ids[0])
	}
	if ids := ts.listIDs(t, ""); len(ids) != 1 {
		t.Errorf("after the keyed retry %d tasks, want 1", len(ids))
	}
	ts.stop()
	db, err := store.Open(t.Context(), filepath.Join(ts.cfg.DataDir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	rep, err := db.Check(t.Context())
	if err != nil || len(rep.Errors) > 0 {
		t.Errorf("db check: %v %v", err, rep.Errors)
	}
}

// TestFinalStateRetried (issue #28, item 3): a local task whose final
// state cannot be written (every commit fails) is not left executing
// until a restart: once the fault clears the final state is written.
func TestFinalStateRetried(t *testing.T) {
	ts, failing := faultyServer(t, false, "injected: write: input/output error")

	id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":700}}`)
	ts.waitStatus(t, id, wire.StatusExecuting)
	failing.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for ts.do(t, "GET", api("/health"), nil).status == http.StatusOK { // the final write failed
		if time.Now().After(deadline) {
			t.Fatal("the task's final write never failed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := ts.task(t, id)["status"]; got != string(wire.StatusExecuting) {
		t.Fatalf("while commits fail the stored task is %v, want executing", got)
	}
	failing.Store(false)
	ts.waitStatus(t, id, wire.StatusCompleted)
}
