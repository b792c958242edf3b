package agent_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// fileMode returns the permission bits of path.
func fileMode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Mode().Perm()
}

func TestIdentity(t *testing.T) {
	cfg := testConfig(t)
	cfg.SystemID, cfg.AgentName = "plant7", "gw-1"
	a := openAgent(t, cfg, nil)
	id := a.Identity()
	if !regexp.MustCompile(`^plant7_gw-1_[0-9a-f]{6}$`).MatchString(id.AgentID) {
		t.Errorf("agent_id = %q, want plant7_gw-1_<6 hex>", id.AgentID)
	}
	if id.AgentName != "gw-1" || id.SystemID != "plant7" || id.Endpoint != "http://"+cfg.Listen {
		t.Errorf("identity = %+v", id)
	}
	pub, err := base64.StdEncoding.DecodeString(id.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Errorf("public key %q is not a base64 Ed25519 key (%v)", id.PublicKey, err)
	}
	keyPath := filepath.Join(cfg.DataDir, agent.KeyFile)
	if m := fileMode(t, keyPath); m != 0o600 {
		t.Errorf("%s mode = %o, want 600", agent.KeyFile, m)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, agent.AdminTokenFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("admin.token written although the admin token is configured (%v)", err)
	}
	closeAgent(t, a, time.Second)

	t.Run("stable across reopen", func(t *testing.T) {
		b := openAgent(t, cfg, nil)
		if got := b.Identity(); got.AgentID != id.AgentID || got.PublicKey != id.PublicKey {
			t.Errorf("after reopen: %s %s, want %s %s", got.AgentID, got.PublicKey, id.AgentID, id.PublicKey)
		}
		closeAgent(t, b, time.Second)
	})
	t.Run("name kept when not configured", func(t *testing.T) {
		c2 := cfg
		c2.AgentName = ""
		b := openAgent(t, c2, nil)
		if got := b.Identity(); got.AgentID != id.AgentID || got.AgentName != "gw-1" {
			t.Errorf("after reopen without a name: %s %s, want %s gw-1", got.AgentID, got.AgentName, id.AgentID)
		}
		closeAgent(t, b, time.Second)
	})
	t.Run("configured id wins", func(t *testing.T) {
		c2 := cfg
		c2.AgentID = "plant7_custom_000001"
		b := openAgent(t, c2, nil)
		if got := b.Identity().AgentID; got != c2.AgentID {
			t.Errorf("agent_id = %s, want the configured %s", got, c2.AgentID)
		}
		closeAgent(t, b, time.Second)
	})
	t.Run("corrupt key refused", func(t *testing.T) {
		if err := os.WriteFile(keyPath, []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := agent.New(cfg, agent.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Open(context.Background())
		if err == nil {
			b.Close(context.Background())
			t.Fatal("Open with a corrupt agent.key succeeded")
		}
		if !strings.Contains(err.Error(), agent.KeyFile) {
			t.Errorf("error %q does not name the key file", err)
		}
		// The failed Open released the data file.
		db, err := store.Open(context.Background(), filepath.Join(cfg.DataDir, store.FileName), store.Options{LockTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("data file still held after a failed Open: %v", err)
		}
		db.Close(context.Background())
	})
}

func TestDefaultAgentName(t *testing.T) {
	a := openAgent(t, func() agent.Config { c := testConfig(t); c.AgentName = ""; return c }(), nil)
	if id := a.Identity().AgentID; !regexp.MustCompile(`^edge_[A-Za-z0-9_.-]+_[0-9a-f]{6}$`).MatchString(id) {
		t.Errorf("agent_id = %q, want edge_<host name>_<6 hex>", id)
	}
}

func TestSecondAgentOnSameDirectory(t *testing.T) {
	cfg := testConfig(t)
	openAgent(t, cfg, nil)
	b, err := agent.New(cfg, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = b.Open(context.Background())
	if err == nil {
		b.Close(context.Background())
		t.Fatal("a second agent opened a data directory in use")
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Errorf("second Open = %v, want store.ErrLocked", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("second Open took %v", el)
	}
}

func TestAdminTokenFile(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminToken = ""
	a := openAgent(t, cfg, nil)
	path := filepath.Join(cfg.DataDir, agent.AdminTokenFile)
	if m := fileMode(t, path); m != 0o600 {
		t.Errorf("%s mode = %o, want 600", agent.AdminTokenFile, m)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(raw))
	if len(tok) < 32 {
		t.Fatalf("admin token %q is too short", tok)
	}
	p, err := a.Tokens().Authenticate(tok)
	if err != nil || !slices.Equal(p.Scopes, []auth.Scope{auth.ScopeAdmin}) || p.ID != "admin" {
		t.Fatalf("Authenticate(admin token) = %+v, %v; want the admin principal", p, err)
	}
	closeAgent(t, a, time.Second)

	b := openAgent(t, cfg, nil)
	raw2, _ := os.ReadFile(path)
	if string(raw2) != string(raw) {
		t.Errorf("admin.token changed on reopen: %q → %q", raw, raw2)
	}
	if _, err := b.Tokens().Authenticate(tok); err != nil {
		t.Errorf("Authenticate(admin token) after reopen: %v", err)
	}
	closeAgent(t, b, time.Second)

	// A configured token replaces the file's for authentication.
	cfg.AdminToken = "configured-secret"
	c := openAgent(t, cfg, nil)
	_, err = c.Tokens().Authenticate(tok)
	wantCode(t, err, wire.CodeUnauthorized)
	if _, err := c.Tokens().Authenticate("configured-secret"); err != nil {
		t.Errorf("Authenticate(configured token): %v", err)
	}
}
