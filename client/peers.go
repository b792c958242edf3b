package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Peer is a paired agent as GET /agents lists it: its pinned identity and
// last known status (online, offline or busy). Times are RFC 3339 text as
// the agent sent them; unknown fields are ignored.
type Peer struct {
	AgentID   string `json:"agent_id"`
	AgentName string `json:"agent_name,omitempty"`
	SystemID  string `json:"system_id,omitempty"`
	Endpoint  string `json:"endpoint"`
	// PublicKey is the pinned Ed25519 key, base64 (standard alphabet).
	PublicKey string `json:"public_key"`
	// TLSFingerprint is the SHA-256 (hex) of the TLS certificate pinned
	// at pairing, if any.
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
	Status         string `json:"status,omitempty"`
	LastSeen       string `json:"last_seen,omitempty"`
	AddedAt        string `json:"added_at,omitempty"`
	// ActiveTasks and MaxTasks are from the peer's last heartbeat.
	ActiveTasks int `json:"active_tasks,omitempty"`
	MaxTasks    int `json:"max_tasks,omitempty"`
}

// UnmarshalJSON decodes a peer leniently: the times may be strings,
// numbers or null.
func (p *Peer) UnmarshalJSON(b []byte) error {
	type plain Peer
	var raw struct {
		plain
		LastSeen json.RawMessage `json:"last_seen"`
		AddedAt  json.RawMessage `json:"added_at"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*p = Peer(raw.plain)
	p.LastSeen = lenientText(raw.LastSeen)
	p.AddedAt = lenientText(raw.AddedAt)
	return nil
}

// KeyFingerprint returns the fingerprint of the peer's pinned key.
func (p *Peer) KeyFingerprint() string { return KeyFingerprint(p.PublicKey) }

// KeyFingerprint returns "SHA256:" and the unpadded base64 of the SHA-256
// of a base64 public key (the form OpenSSH shows), or "" when the key is
// empty or not base64.
func KeyFingerprint(publicKey string) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(publicKey))
	if err != nil || len(key) == 0 {
		return ""
	}
	sum := sha256.Sum256(key)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// OutboxItem is one message of the durable outbox: pending delivery, or a
// dead letter that gave up. Peer names the receiving agent; URL a plain
// webhook (exactly one is set). Times are RFC 3339 text.
type OutboxItem struct {
	ID string `json:"id"`
	// State is OutboxPending or OutboxDead.
	State         string `json:"state,omitempty"`
	Peer          string `json:"peer,omitempty"`
	URL           string `json:"url,omitempty"`
	Type          string `json:"type"`
	CorrelationID string `json:"correlation_id,omitempty"`
	Attempts      int    `json:"attempts"`
	LastError     string `json:"last_error,omitempty"`
	CreatedAt     string `json:"created_at,omitempty"`
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	DeadAt        string `json:"dead_at,omitempty"`
}

// UnmarshalJSON decodes an item leniently: the times may be strings,
// numbers or null.
func (it *OutboxItem) UnmarshalJSON(b []byte) error {
	type plain OutboxItem
	var raw struct {
		plain
		CreatedAt     json.RawMessage `json:"created_at"`
		NextAttemptAt json.RawMessage `json:"next_attempt_at"`
		DeadAt        json.RawMessage `json:"dead_at"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*it = OutboxItem(raw.plain)
	it.CreatedAt = lenientText(raw.CreatedAt)
	it.NextAttemptAt = lenientText(raw.NextAttemptAt)
	it.DeadAt = lenientText(raw.DeadAt)
	return nil
}

// The two outbox lists.
const (
	OutboxPending = "pending"
	OutboxDead    = "dead"
)

// OutboxQuery selects items of GET /outbox: State is OutboxPending (the
// default when empty) or OutboxDead; Peer keeps the items to one agent,
// URL those to one webhook.
type OutboxQuery struct {
	State     string
	Peer      string
	URL       string
	Limit     int // page size; 0 means the agent's default (100, at most 1000)
	PageToken string
}

// OutboxPage is one page of GET /outbox.
type OutboxPage struct {
	Items         []OutboxItem `json:"items"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// lenientText returns a JSON string's text, a number's digits, and "" for
// null, nothing or anything else.
func lenientText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// AddPeer pairs with the agent at endpoint (POST /agents {"endpoint"}):
// the agent fetches that agent's identity and pins its key. It returns the
// new peer.
func (c *Client) AddPeer(ctx context.Context, endpoint string) (*Peer, error) {
	return c.AddPeerWith(ctx, endpoint, PairOptions{})
}

// PairOptions are what pairing may add (POST /agents, POST
// /pairing/{agent_id}/accept).
type PairOptions struct {
	// TLSFingerprint pins the certificate of the other agent's https
	// endpoint: the SHA-256 hex that synapse cert init printed there.
	TLSFingerprint string `json:"tls_fingerprint,omitempty"`
}

// AddPeerWith is AddPeer with options.
func (c *Client) AddPeerWith(ctx context.Context, endpoint string, o PairOptions) (*Peer, error) {
	var p Peer
	body := map[string]string{"endpoint": endpoint}
	if o.TLSFingerprint != "" {
		body["tls_fingerprint"] = o.TLSFingerprint
	}
	if _, _, err := c.do(ctx, http.MethodPost, "/agents", nil, body, &p); err != nil {
		return nil, fmt.Errorf("add peer %s: %w", endpoint, err)
	}
	return &p, nil
}

// ListPeers lists the paired agents (GET /agents).
func (c *Client) ListPeers(ctx context.Context) ([]Peer, error) {
	var out struct {
		Agents []Peer `json:"agents"`
	}
	if _, _, err := c.do(ctx, http.MethodGet, "/agents", nil, nil, &out); err != nil {
		return nil, fmt.Errorf("list peers: %w", err)
	}
	return out.Agents, nil
}

// GetPeer returns one paired agent (GET /agents/{agent_id}).
func (c *Client) GetPeer(ctx context.Context, agentID string) (*Peer, error) {
	eid, err := escapeID(agentID)
	if err != nil {
		return nil, fmt.Errorf("get peer: %w", err)
	}
	var p Peer
	if _, _, err := c.do(ctx, http.MethodGet, "/agents/"+eid, nil, nil, &p); err != nil {
		return nil, fmt.Errorf("get peer %s: %w", agentID, err)
	}
	return &p, nil
}

// RemovePeer unpairs an agent (DELETE /agents/{agent_id}); its messages
// are refused from then on.
func (c *Client) RemovePeer(ctx context.Context, agentID string) error {
	eid, err := escapeID(agentID)
	if err != nil {
		return fmt.Errorf("remove peer: %w", err)
	}
	if _, _, err := c.do(ctx, http.MethodDelete, "/agents/"+eid, nil, nil, nil); err != nil {
		return fmt.Errorf("remove peer %s: %w", agentID, err)
	}
	return nil
}

// ListOutbox returns one page of outbox items (GET /outbox?state=&peer=
// &url=&limit=&page_token=, admin scope); pass the returned NextPageToken
// as q.PageToken for the next page, until it is empty.
func (c *Client) ListOutbox(ctx context.Context, q OutboxQuery) (*OutboxPage, error) {
	v := url.Values{}
	state := q.State
	if state == "" {
		state = OutboxPending
	}
	v.Set("state", state)
	for k, s := range map[string]string{"peer": q.Peer, "url": q.URL, "page_token": q.PageToken} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var page OutboxPage
	if _, _, err := c.do(ctx, http.MethodGet, "/outbox", v, nil, &page); err != nil {
		return nil, fmt.Errorf("list outbox: %w", err)
	}
	return &page, nil
}

// RetryOutbox puts one item back in line for delivery now (POST
// /outbox/{id}/retry, admin scope): a dead letter is requeued, a pending
// item's backoff is cut short. It returns the item as it is now.
func (c *Client) RetryOutbox(ctx context.Context, id string) (*OutboxItem, error) {
	eid, err := escapeID(id)
	if err != nil {
		return nil, fmt.Errorf("retry outbox item: %w", err)
	}
	var it OutboxItem
	if _, _, err := c.do(ctx, http.MethodPost, "/outbox/"+eid+"/retry", nil, nil, &it); err != nil {
		return nil, fmt.Errorf("retry outbox item %s: %w", id, err)
	}
	return &it, nil
}

// RetryDeadLetters requeues every dead letter to one peer, or with url
// set instead to one webhook URL, in their original order (POST
// /outbox/retry?peer= or ?url=, admin scope), and returns how many.
func (c *Client) RetryDeadLetters(ctx context.Context, peer, webhookURL string) (int, error) {
	v := url.Values{}
	switch {
	case peer != "":
		v.Set("peer", peer)
	case webhookURL != "":
		v.Set("url", webhookURL)
	default:
		return 0, fmt.Errorf("retry dead letters: %w", ErrEmptyID)
	}
	var out struct {
		Requeued int `json:"requeued"`
	}
	if _, _, err := c.do(ctx, http.MethodPost, "/outbox/retry", v, nil, &out); err != nil {
		return 0, fmt.Errorf("retry dead letters of %s%s: %w", peer, webhookURL, err)
	}
	return out.Requeued, nil
}

// DropOutbox deletes an item, pending or dead, for good (DELETE
// /outbox/{id}).
func (c *Client) DropOutbox(ctx context.Context, id string) error {
	eid, err := escapeID(id)
	if err != nil {
		return fmt.Errorf("drop outbox item: %w", err)
	}
	if _, _, err := c.do(ctx, http.MethodDelete, "/outbox/"+eid, nil, nil, nil); err != nil {
		return fmt.Errorf("drop outbox item %s: %w", id, err)
	}
	return nil
}
