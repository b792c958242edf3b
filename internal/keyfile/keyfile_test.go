package keyfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/keyfile"
)

// TestKey: the first load creates the key file with mode 0600, the next
// loads return the same key; a file that is not PEM is an error.
func TestKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.key")
	k1, err := keyfile.LoadOrCreateKey(path)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("key file mode %v, want 0600", got)
	}
	k2, err := keyfile.LoadOrCreateKey(path)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if !k1.Equal(k2) {
		t.Error("the reloaded key differs from the created one")
	}
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keyfile.LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), "not a PEM file") {
		t.Errorf("load of a non-PEM file: %v, want not a PEM file", err)
	}
}

// TestToken: the first load creates a prefixed token (mode 0600, with a
// newline), the next ones read it trimmed; an empty file is an error.
func TestToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.token")
	tok, err := keyfile.LoadOrCreateToken(path, "syn_admin_")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !strings.HasPrefix(tok, "syn_admin_") || len(tok) != len("syn_admin_")+32 {
		t.Errorf("token %q: want syn_admin_ and 32 characters", tok)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != tok+"\n" {
		t.Errorf("file holds %q, want %q", raw, tok+"\n")
	}
	again, err := keyfile.LoadOrCreateToken(path, "other_")
	if err != nil || again != tok {
		t.Errorf("reload = %q, %v; want %q", again, err, tok)
	}
	if err := os.WriteFile(path, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keyfile.LoadOrCreateToken(path, "x"); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("load of an empty file: %v, want is empty", err)
	}
}
