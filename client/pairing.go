package client

import (
	"context"
	"fmt"
	"net/http"
)

// PairRequest is an agent that paired this one and asks to be paired
// back (GET /pairing): an operator accepts or declines it.
type PairRequest struct {
	AgentID   string `json:"agent_id"`
	AgentName string `json:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty"`
	Endpoint  string `json:"endpoint"`
	// PublicKey is the key the request was signed with, base64.
	PublicKey string `json:"public_key"`
	FirstSeen string `json:"first_seen,omitempty"`
	LastSeen  string `json:"last_seen,omitempty"`
	// Refused counts the messages refused from it while it waited.
	Refused int `json:"refused"`
}

// KeyFingerprint returns the fingerprint of the key the request names.
func (p *PairRequest) KeyFingerprint() string { return KeyFingerprint(p.PublicKey) }

// ListPairRequests lists the pending pair requests (GET /pairing, admin).
func (c *Client) ListPairRequests(ctx context.Context) ([]PairRequest, error) {
	var out struct {
		Pending []PairRequest `json:"pending"`
	}
	if _, _, err := c.do(ctx, http.MethodGet, "/pairing", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("list pair requests: %w", err)
	}
	return out.Pending, nil
}

// AcceptPeer accepts the pair request of agentID (POST
// /pairing/{agent_id}/accept, admin): the agent checks the requester's
// identity at its endpoint and pins its key. It returns the new peer.
func (c *Client) AcceptPeer(ctx context.Context, agentID string) (*Peer, error) {
	return c.AcceptPeerWith(ctx, agentID, PairOptions{})
}

// AcceptPeerWith is AcceptPeer with options (the requester's TLS
// certificate to pin).
func (c *Client) AcceptPeerWith(ctx context.Context, agentID string, o PairOptions) (*Peer, error) {
	eid, err := escapeID(agentID)
	if err != nil {
		return nil, fmt.Errorf("accept peer: %w", err)
	}
	var body any
	if o.TLSFingerprint != "" {
		body = o
	}
	var p Peer
	if _, _, err := c.do(ctx, http.MethodPost, "/pairing/"+eid+"/accept", nil, body, &p); err != nil {
		return nil, fmt.Errorf("accept peer %s: %w", agentID, err)
	}
	return &p, nil
}

// DeclinePeer forgets the pair request of agentID (DELETE
// /pairing/{agent_id}, admin); its next request is listed again.
func (c *Client) DeclinePeer(ctx context.Context, agentID string) error {
	eid, err := escapeID(agentID)
	if err != nil {
		return fmt.Errorf("decline peer: %w", err)
	}
	if _, _, err := c.do(ctx, http.MethodDelete, "/pairing/"+eid, nil, nil, nil); err != nil {
		return fmt.Errorf("decline peer %s: %w", agentID, err)
	}
	return nil
}
