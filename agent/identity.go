package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/synapse-edge/synapse/internal/keyfile"
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
	key, err := keyfile.LoadOrCreateKey(filepath.Join(a.cfg.Load().DataDir, KeyFile))
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
	name := a.cfg.Load().AgentName
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
	id := a.cfg.Load().AgentID
	if id == "" {
		id = st.AgentID
	}
	if id == "" {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		id = fmt.Sprintf("%s_%s_%s", a.cfg.Load().SystemID, name, hex.EncodeToString(b[:]))
	}
	next := storedIdentity{AgentID: id, AgentName: name, SystemID: a.cfg.Load().SystemID}
	if next != st {
		raw, _ := json.Marshal(next)
		if err := a.db.Update(ctx, func(tx *store.Tx) error { return tx.PutMeta("identity", raw) }); err != nil {
			return fmt.Errorf("identity: %w", err)
		}
	}
	endpoint := a.cfg.Load().Endpoint
	if endpoint == "" {
		endpoint = "http://" + a.cfg.Load().Listen
	}
	a.identity = wire.Identity{
		AgentID: id, AgentName: name, SystemID: a.cfg.Load().SystemID,
		PublicKey:       base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		Endpoint:        endpoint,
		ProtocolVersion: wire.ProtocolVersion,
	}
	return nil
}

// loadAdminToken returns the configured admin token, or the one in
// DataDir/admin.token, creating that file (mode 0600) at first start.
func (a *Agent) loadAdminToken() (string, error) {
	if a.cfg.Load().AdminToken != "" {
		return a.cfg.Load().AdminToken, nil
	}
	return keyfile.LoadOrCreateToken(filepath.Join(a.cfg.Load().DataDir, AdminTokenFile), "syn_admin_")
}
