package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// TestCheckStoppedIsNotOK: a check whose context ends before it read
// every task (db check's --timeout on a large store) reports that, not
// "ok" with a part of the tasks counted.
func TestCheckStoppedIsNotOK(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path, store.Options{})
	putTasks(t, db, 3, "echo", wire.StatusCompleted)
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := store.CheckFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Errors) == 0 || !strings.Contains(rep.Errors[len(rep.Errors)-1], "check stopped after 0 tasks") {
		t.Errorf("check with an ended context: ok %v, errors %q", rep.OK, rep.Errors)
	}
}
