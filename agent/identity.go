package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Files in the data directory besides the store.
const (
	KeyFile        = "agent.key"
	AdminTokenFile = "admin.token"
)

type storedIdentity struct {
	AgentID   string `json:"agent_id"`
	AgentName string `json:"agent_name"`
	SystemID  string `json:"system_id"`
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// loadIdentity reads or creates the agent id (stored in the data file) and the
// Ed25519 key (a PKCS #8 PEM file, mode 0600, in the data directory).
func (a *Agent) loadIdentity(ctx context.Context) error {
	key, err := loadOrCreateKey(filepath.Join(a.cfg.DataDir, KeyFile))
	if err != nil {
		return err
	}
	a.key = key
	var st storedIdentity
	err = a.db.View(func(tx *store.Tx) error {
		if raw := tx.Meta("identity"); raw != nil {
			return json.Unmarshal(raw, &st)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	name := a.cfg.AgentName
	if name == "" {
		name = st.AgentName
	}
	if name == "" {
		host, _ := os.Hostname()
		name = strings.Trim(unsafeName.ReplaceAllString(host, "-"), "-")
		if name == "" {
			name = "synapse"
		}
	}
	id := a.cfg.AgentID
	if id == "" {
		id = st.AgentID
	}
	if id == "" {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		id = fmt.Sprintf("%s_%s_%s", a.cfg.SystemID, name, hex.EncodeToString(b[:]))
	}
	next := storedIdentity{AgentID: id, AgentName: name, SystemID: a.cfg.SystemID}
	if next != st {
		raw, _ := json.Marshal(next)
		if err := a.db.Update(ctx, func(tx *store.Tx) error { return tx.PutMeta("identity", raw) }); err != nil {
			return fmt.Errorf("identity: %w", err)
		}
	}
	endpoint := a.cfg.Endpoint
	if endpoint == "" {
		endpoint = "http://" + a.cfg.Listen
	}
	a.identity = wire.Identity{
		AgentID: id, AgentName: name, SystemID: a.cfg.SystemID,
		PublicKey:       base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		Endpoint:        endpoint,
		ProtocolVersion: wire.ProtocolVersion,
	}
	return nil
}

func loadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		blk, _ := pem.Decode(raw)
		if blk == nil {
			return nil, fmt.Errorf("identity key %s: not a PEM file", path)
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("identity key %s: %w", path, err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("identity key %s: not an Ed25519 key", path)
		}
		return ek, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	return priv, nil
}

// loadAdminToken returns the configured admin token, or the one in
// DataDir/admin.token, creating that file (mode 0600) at first start.
func (a *Agent) loadAdminToken() (string, error) {
	if a.cfg.AdminToken != "" {
		return a.cfg.AdminToken, nil
	}
	path := filepath.Join(a.cfg.DataDir, AdminTokenFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		if tok := strings.TrimSpace(string(raw)); tok != "" {
			return tok, nil
		}
		return "", fmt.Errorf("admin token file %s is empty", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := "syn_admin_" + base64.RawURLEncoding.EncodeToString(b[:])
	if err := writeFileAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return tok, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
