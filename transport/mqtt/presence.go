package mqtt

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Presence. Each agent keeps a retained card on
// {prefix}/agents/{agent_id}/card: a signed envelope (message_type
// "agent_card", receiver "*") whose JSON payload is
//
//	{"status": "online" | "offline", "public_key": base64, "endpoint",
//	 "task_types": [name, ...], "capabilities": {task_type: [capability, ...]}}
//
// published on every connection, and registered with the broker as the
// connection's Last Will in its "offline" form (signed when the transport
// starts): when the agent dies (kill -9, power, link), the broker replaces
// the card within 1.5 keep-alives. A reader verifies the signature with
// the card's public_key, and, for a peer it pinned, that the key is the
// pinned one (the broker is not trusted).

// MsgAgentCard is the message_type of a presence card.
const MsgAgentCard wire.MessageType = "agent_card"

// Card is a presence card's payload.
type Card struct {
	Status    string   `json:"status"`
	PublicKey string   `json:"public_key"`
	Endpoint  string   `json:"endpoint,omitempty"`
	TaskTypes []string `json:"task_types,omitempty"`
	// Capabilities lists, by task type, the capabilities a task type
	// declares (only the task types that declare some).
	Capabilities map[string][]string `json:"capabilities,omitempty"`
}

// Card statuses.
const (
	CardOnline  = "online"
	CardOffline = "offline"
)

// Card is {prefix}/agents/{agent_id}/card.
func (t Topics) Card(agentID string) (string, error) {
	if !validLevel(agentID) {
		return "", fmt.Errorf("mqtt: agent_id %q cannot be a topic level", agentID)
	}
	return t.Prefix + "/agents/" + agentID + "/card", nil
}

// Signer signs an envelope as this agent (agent.Agent.Sign).
type Signer func(*wire.UnifiedSynapseMessage) error

// SetPresence makes Start publish this agent's card, online, on every
// connection and register its offline form as the Last Will. Call it
// before Start.
func (t *Transport) SetPresence(card Card, sign Signer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.card, t.sign = &card, sign
}

// presence builds the online card and the offline will.
func (t *Transport) presence(o *Options, systemID, agentID string) error {
	if t.card == nil {
		return nil
	}
	topic, err := t.topics().Card(agentID)
	if err != nil {
		return err
	}
	build := func(status string) ([]byte, error) {
		c := *t.card
		c.Status = status
		p, err := wire.NewJSONPayload(c)
		if err != nil {
			return nil, err
		}
		m := wire.NewMessage(MsgAgentCard, wire.AgentRef{AgentID: agentID, SystemID: systemID, Endpoint: c.Endpoint},
			wire.AgentRef{AgentID: "*"}, p, time.Now())
		if err := t.sign(m); err != nil {
			return nil, err
		}
		return wire.EncodeEnvelopeJSON(m)
	}
	online, err := build(CardOnline)
	if err != nil {
		return fmt.Errorf("mqtt: presence card: %w", err)
	}
	offline, err := build(CardOffline)
	if err != nil {
		return fmt.Errorf("mqtt: presence card: %w", err)
	}
	o.Announce = &Retained{Topic: topic, Payload: online}
	o.Will = &Retained{Topic: topic, Payload: offline}
	return nil
}

// Leave publishes the offline card now, as the agent begins to stop,
// and keeps it so: a reconnection during the stop announces no online
// card. The connection stays up for the answers still due; Close
// disconnects. Safe before Start and after Close.
func (t *Transport) Leave(ctx context.Context) {
	if c := t.Client(); c != nil {
		c.leaving.Store(true)
		t.leave(ctx, c)
	}
}

// leave publishes the offline card before a clean disconnect (the broker
// sends the Will only when a client vanishes).
func (t *Transport) leave(ctx context.Context, c *Client) {
	if c.opts.Will == nil || !c.pc.IsConnectionOpen() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := c.wait(ctx, c.pc.Publish(c.opts.Will.Topic, 1, true, c.opts.Will.Payload)); err != nil && !errors.Is(err, ErrClosed) {
		t.log.Warn("mqtt: could not publish the offline card", "err", err)
	}
}

// ParseCard decodes and checks a presence card from the broker: a JSON
// envelope of type agent_card, signed by the key in its payload. It does
// not check the timestamp (a card is as old as its connection).
func ParseCard(raw []byte) (*wire.UnifiedSynapseMessage, *Card, error) {
	if len(raw) > 64<<10 {
		return nil, nil, errors.New("mqtt: card larger than 64 KiB")
	}
	m, err := wire.DecodeEnvelope(raw, false)
	if err != nil {
		return nil, nil, fmt.Errorf("mqtt: card: %w", err)
	}
	if m.MessageType != MsgAgentCard {
		return nil, nil, fmt.Errorf("mqtt: card: message_type %q", m.MessageType)
	}
	var c Card
	if err := m.Payload.Decode(&c); err != nil {
		return nil, nil, fmt.Errorf("mqtt: card payload: %w", err)
	}
	if c.Status != CardOnline && c.Status != CardOffline {
		return nil, nil, fmt.Errorf("mqtt: card status %q", c.Status)
	}
	key, err := base64.StdEncoding.DecodeString(c.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return nil, nil, errors.New("mqtt: card public_key is not base64 of an Ed25519 key")
	}
	if err := wire.Verify(m, ed25519.PublicKey(key)); err != nil {
		return nil, nil, fmt.Errorf("mqtt: card signature: %w", err)
	}
	return m, &c, nil
}
