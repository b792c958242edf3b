package store

import (
	"bytes"
	"encoding/binary"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Peers and the message ids seen from them (SPEC §6):
//
//	peers       agent_id → Peer JSON
//	p2p_seen    message_id → received_at(unix ns, uint64 BE)
//	p2p_seen_at received_at(unix ns, uint64 BE) message_id → empty (expiry index)
//
// The buckets are created by the first write that needs them, so files
// written before they existed open unchanged.
var (
	bucketPeers    = []byte("peers")
	bucketP2PSeen  = []byte("p2p_seen")
	bucketP2PSeenX = []byte("p2p_seen_at")
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

// bucket returns the named bucket, creating it in a write transaction; in
// a read transaction a missing bucket is nil.
func (tx *Tx) bucket(name []byte) (*bucket, error) {
	if tx.writable() {
		return tx.createRoot(name)
	}
	return tx.root(name), nil
}

// PutPeer writes a peer record.
func (tx *Tx) PutPeer(p *Peer) error {
	b, err := tx.bucket(bucketPeers)
	if err != nil {
		return err
	}
	return putJSON(b, []byte(p.AgentID), p)
}

// Peer reads one peer; ErrNotFound if it is not paired.
func (tx *Tx) Peer(agentID string) (*Peer, error) {
	b, err := tx.bucket(bucketPeers)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, ErrNotFound
	}
	p := new(Peer)
	if err := getJSON(b, []byte(agentID), p); err != nil {
		return nil, err
	}
	return p, nil
}

// Peers lists every peer in agent_id order.
func (tx *Tx) Peers() ([]*Peer, error) {
	b, err := tx.bucket(bucketPeers)
	if err != nil || b == nil {
		return nil, err
	}
	var out []*Peer
	err = b.ForEach(func(k, _ []byte) error {
		p := new(Peer)
		if err := getJSON(b, k, p); err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// DeletePeer removes a peer; ErrNotFound if there is none.
func (tx *Tx) DeletePeer(agentID string) error {
	b, err := tx.bucket(bucketPeers)
	if err != nil {
		return err
	}
	if b.Get([]byte(agentID)) == nil {
		return ErrNotFound
	}
	return b.Delete([]byte(agentID))
}

// SeenMessage reports whether a message id was recorded by MarkSeen (and
// not pruned since).
func (tx *Tx) SeenMessage(messageID string) bool {
	b, err := tx.bucket(bucketP2PSeen)
	return err == nil && b != nil && b.Get([]byte(messageID)) != nil
}

// MarkSeen records a message id as processed at time at. Marking an id
// again keeps its first time.
func (tx *Tx) MarkSeen(messageID string, at time.Time) error {
	seen, err := tx.bucket(bucketP2PSeen)
	if err != nil {
		return err
	}
	if seen.Get([]byte(messageID)) != nil {
		return nil
	}
	idx, err := tx.bucket(bucketP2PSeenX)
	if err != nil {
		return err
	}
	ts := beTime(at)
	if err := idx.Put(append(ts, messageID...), nil); err != nil {
		return err
	}
	return seen.Put([]byte(messageID), ts)
}

// PruneSeen forgets up to max message ids recorded before cutoff and
// returns how many it forgot.
func (tx *Tx) PruneSeen(cutoff time.Time, max int) (int, error) {
	idx, err := tx.bucket(bucketP2PSeenX)
	if err != nil {
		return 0, err
	}
	seen, err := tx.bucket(bucketP2PSeen)
	if err != nil {
		return 0, err
	}
	cut := binary.BigEndian.AppendUint64(nil, uint64(cutoff.UnixNano()))
	c := idx.Cursor()
	n := 0
	for k, _ := c.First(); k != nil && n < max && len(k) >= 8 && bytes.Compare(k[:8], cut) < 0; k, _ = c.First() {
		if err := seen.Delete(k[8:]); err != nil {
			return n, err
		}
		if err := idx.Delete(k); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
