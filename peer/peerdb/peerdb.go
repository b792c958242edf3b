// Package peerdb keeps the paired peers and the message ids seen from
// them (SPEC §6) in the store, through store.Records, under the keys the
// store used before the records left it (the layout is unchanged, byte
// for byte):
//
//	peers       agent_id → Peer JSON
//	p2p_seen    message_id → received_at(unix ns, uint64 BE)
//	p2p_seen_at received_at(unix ns, uint64 BE) message_id → empty (expiry index)
//
// The buckets are created by the first write that needs them, so files
// written before they existed open unchanged. Package peer owns their
// meaning; contracts and group read them.
package peerdb

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

var (
	peers  = store.JSONRecords[Peer]("peers")
	seen   = store.RawRecords("p2p_seen")
	seenAt = store.RawRecords("p2p_seen_at")
)

// Peer is a paired agent: its pinned identity and the last known status.
type Peer struct {
	AgentID   string `json:"agent_id"`
	AgentName string `json:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty"`
	// Endpoint is the base URL the peer was paired with.
	Endpoint string `json:"endpoint"`
	// PublicKey is the pinned Ed25519 key, base64 (standard alphabet).
	PublicKey string    `json:"public_key"`
	Status    string    `json:"status"`
	LastSeen  time.Time `json:"last_seen"`
	AddedAt   time.Time `json:"added_at"`
	// Capabilities and Interfaces are the peer's documents as last read
	// (at pairing, or when it came back), at CapabilitiesAt.
	Capabilities   *wire.AgentCapabilities     `json:"capabilities,omitempty"`
	Interfaces     []wire.ImplementedInterface `json:"interfaces,omitempty"`
	CapabilitiesAt time.Time                   `json:"capabilities_at,omitzero"`

	// TLSFingerprint, if set, is the SHA-256 (lowercase hex) of the TLS
	// certificate pinned at pairing for an https Endpoint.
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
}

// Put writes a peer record.
func Put(tx *store.Tx, p *Peer) error { return peers.Put(tx, []byte(p.AgentID), p) }

// Get reads one peer; store.ErrNotFound if it is not paired.
func Get(tx *store.Tx, agentID string) (*Peer, error) { return peers.Get(tx, []byte(agentID)) }

// List lists every peer in agent_id order.
func List(tx *store.Tx) ([]*Peer, error) {
	var out []*Peer
	err := peers.Scan(tx, nil, func(_ []byte, p *Peer) error {
		c := *p
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes a peer; store.ErrNotFound if there is none.
func Delete(tx *store.Tx, agentID string) error {
	if !peers.Has(tx, []byte(agentID)) {
		return store.ErrNotFound
	}
	return peers.Delete(tx, []byte(agentID))
}

// Seen reports whether a message id was recorded by MarkSeen (and not
// pruned since).
func Seen(tx *store.Tx, messageID string) bool { return seen.Has(tx, []byte(messageID)) }

// MarkSeen records a message id as processed at time at. Marking an id
// again keeps its first time.
func MarkSeen(tx *store.Tx, messageID string, at time.Time) error {
	if seen.Has(tx, []byte(messageID)) {
		return nil
	}
	ts := binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano()))
	var empty []byte
	if err := seenAt.Put(tx, append(bytes.Clone(ts), messageID...), &empty); err != nil {
		return err
	}
	return seen.Put(tx, []byte(messageID), &ts)
}

// PruneSeen forgets up to max message ids recorded before cutoff and
// returns how many it forgot.
func PruneSeen(tx *store.Tx, cutoff time.Time, max int) (int, error) {
	cut := binary.BigEndian.AppendUint64(nil, uint64(cutoff.UnixNano()))
	var old [][]byte
	err := seenAt.Scan(tx, nil, func(k []byte, _ *[]byte) error {
		if len(old) >= max || len(k) < 8 || bytes.Compare(k[:8], cut) >= 0 {
			return store.ErrStop
		}
		old = append(old, bytes.Clone(k))
		return nil
	})
	if err != nil {
		return 0, err
	}
	for n, k := range old {
		if err := seen.Delete(tx, k[8:]); err != nil {
			return n, err
		}
		if err := seenAt.Delete(tx, k); err != nil {
			return n, err
		}
	}
	return len(old), nil
}
