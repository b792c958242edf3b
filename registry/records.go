package registry

import (
	"errors"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// The directory's records, in the store through its typed-bucket helper
// (store.Records), as they were written when they were store.Tx's:
//
//	registry    agent_id → record JSON
//
// The bucket is created by the first registration, so files written before
// it existed open unchanged.
var records = store.JSONRecords[record]("registry")

// errBadKey: an agent id that is empty or holds a NUL byte.
var errBadKey = errors.New("registry entry needs an agent id without NUL bytes")

// record is an agent registered in the directory as it is stored: its
// pinned identity, what it declared, and when it was last heard from.
type record struct {
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

func recordKey(agentID string) ([]byte, error) {
	if agentID == "" {
		return nil, errBadKey
	}
	for i := 0; i < len(agentID); i++ {
		if agentID[i] == 0 {
			return nil, errBadKey
		}
	}
	return []byte(agentID), nil
}

// putRecord writes a record.
func putRecord(tx *store.Tx, r *record) error {
	k, err := recordKey(r.AgentID)
	if err != nil {
		return err
	}
	return records.Put(tx, k, r)
}

// getRecord reads one record; store.ErrNotFound if the agent is not
// registered.
func getRecord(tx *store.Tx, agentID string) (*record, error) {
	k, err := recordKey(agentID)
	if err != nil {
		return nil, err
	}
	return records.Get(tx, k)
}

// forEachRecord calls fn for every record in agent_id order until fn
// returns an error, which it returns.
func forEachRecord(tx *store.Tx, fn func(*record) error) error {
	return records.Scan(tx, nil, func(_ []byte, r *record) error {
		c := *r // r is reused by the scan
		return fn(&c)
	})
}

// countRecords is the number of records.
func countRecords(tx *store.Tx) int { return records.Count(tx) }

// deleteRecord removes a record (and so its pinned key); store.ErrNotFound
// if there is none.
func deleteRecord(tx *store.Tx, agentID string) error {
	k, err := recordKey(agentID)
	if err != nil {
		return err
	}
	if !records.Has(tx, k) {
		return store.ErrNotFound
	}
	return records.Delete(tx, k)
}
