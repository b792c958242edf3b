package admincmd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent/auditdb"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/store"
)

// TestAuditVerifyOffline: `synapse audit verify` passes on an intact log and
// fails (exit 1, naming the record) once a stored record's bytes are edited
// in the data file.
func TestAuditVerifyOffline(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, store.FileName)
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := db.Update(context.Background(), func(tx *store.Tx) error {
			return auditdb.Append(tx, &auditdb.Record{At: time.Unix(int64(i), 0).UTC(), Kind: "contract_made",
				Peer: fmt.Sprintf("peer-%d", i), Detail: map[string]any{"contract_id": fmt.Sprintf("contract-%04d", i)}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := clitest.Run(t, "", "audit", "verify", "--offline", "--data", dir); code != 0 || !strings.Contains(out, "ok:        true") {
		t.Fatalf("intact: exit %d\n%s%s", code, out, errOut)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Edit the stored bytes of record 2 in place, same length.
	edited := bytes.ReplaceAll(raw, []byte("contract-0001"), []byte("contract-9999")) // old page copies too
	if bytes.Equal(edited, raw) {
		t.Fatal("record 2 not found in the file")
	}
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := clitest.Run(t, "", "audit", "verify", "--offline", "--data", dir)
	if code != 1 || !strings.Contains(out+errOut, "record 2") {
		t.Errorf("after editing record 2: exit %d, want 1 naming record 2\n%s%s", code, out, errOut)
	}
}
