package store

import (
	"errors"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// The directory of an agent that acts as a registry for others (seed 000
// §6.4):
//
//	registry    agent_id → RegistryEntry JSON
//
// The bucket is created by the first registration, so files written before
// it existed open unchanged.
var bucketRegistry = []byte("registry")

// ErrBadRegistryKey: an agent id that is empty or holds a NUL byte.
var ErrBadRegistryKey = errors.New("registry entry needs an agent id without NUL bytes")

// RegistryEntry is an agent registered in the directory: its pinned
// identity, what it declared, and when it was last heard from.
type RegistryEntry struct {
	AgentID   string `json:"agent_id"`
	AgentName string `json:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty"`
	Endpoint  string `json:"endpoint"`
	// PublicKey is the Ed25519 key pinned at the first registration,
	// base64 (standard alphabet).
	PublicKey       string                      `json:"public_key"`
	ProtocolVersion string                      `json:"protocol_version,omitempty"`
	Capabilities    wire.AgentCapabilities      `json:"capabilities"`
	Interfaces      []wire.ImplementedInterface `json:"interfaces"`
	// Status is what the agent last reported: online or busy. Whether it
	// is offline is decided when reading, from LastSeen.
	Status      string `json:"status"`
	ActiveTasks int    `json:"active_tasks"`
	MaxTasks    int    `json:"max_tasks"`
	// HeartbeatIntervalSeconds is how often the agent said it re-registers.
	HeartbeatIntervalSeconds int       `json:"heartbeat_interval_seconds"`
	RegisteredAt             time.Time `json:"registered_at"`
	LastSeen                 time.Time `json:"last_seen"`
	// SignedAt is the envelope timestamp of the last registration taken:
	// one signed at or before it is a replay.
	SignedAt time.Time `json:"signed_at"`
}

func registryKey(agentID string) ([]byte, error) {
	if agentID == "" {
		return nil, ErrBadRegistryKey
	}
	for i := 0; i < len(agentID); i++ {
		if agentID[i] == 0 {
			return nil, ErrBadRegistryKey
		}
	}
	return []byte(agentID), nil
}

// PutRegistryEntry writes an entry.
func (tx *Tx) PutRegistryEntry(e *RegistryEntry) error {
	k, err := registryKey(e.AgentID)
	if err != nil {
		return err
	}
	b, err := tx.bucket(bucketRegistry)
	if err != nil {
		return err
	}
	return putJSON(b, k, e)
}

// RegistryEntry reads one entry; ErrNotFound if the agent is not
// registered.
func (tx *Tx) RegistryEntry(agentID string) (*RegistryEntry, error) {
	k, err := registryKey(agentID)
	if err != nil {
		return nil, err
	}
	b, err := tx.bucket(bucketRegistry)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, ErrNotFound
	}
	e := new(RegistryEntry)
	if err := getJSON(b, k, e); err != nil {
		return nil, err
	}
	return e, nil
}

// ForEachRegistryEntry calls fn for every entry in agent_id order until fn
// returns an error, which it returns.
func (tx *Tx) ForEachRegistryEntry(fn func(*RegistryEntry) error) error {
	b, err := tx.bucket(bucketRegistry)
	if err != nil || b == nil {
		return err
	}
	return b.ForEach(func(k, _ []byte) error {
		e := new(RegistryEntry)
		if err := getJSON(b, k, e); err != nil {
			return err
		}
		return fn(e)
	})
}

// RegistrySize is the number of entries.
func (tx *Tx) RegistrySize() (int, error) {
	b, err := tx.bucket(bucketRegistry)
	if err != nil || b == nil {
		return 0, err
	}
	return b.KeyN(), nil
}

// DeleteRegistryEntry removes an entry (and so its pinned key);
// ErrNotFound if there is none.
func (tx *Tx) DeleteRegistryEntry(agentID string) error {
	k, err := registryKey(agentID)
	if err != nil {
		return err
	}
	b, err := tx.bucket(bucketRegistry)
	if err != nil {
		return err
	}
	if b.Get(k) == nil {
		return ErrNotFound
	}
	return b.Delete(k)
}
