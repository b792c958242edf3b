package mqtt

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Discovery. A Directory subscribes to {prefix}/agents/+/card and keeps,
// in memory, the last card of each agent that checks out: ParseCard (a
// JSON agent_card envelope of at most 64 KiB, signed by the key it
// carries), the topic's agent_id is the envelope's sender, and the key is
// the one this directory first saw for that agent_id. Anything else is
// dropped and counted (Dropped): the broker, and whoever may publish
// there, is not trusted with identities. An empty retained message (how a
// retained card is deleted) removes the agent.
//
// What a card cannot prove is freshness: a broker that replays an old
// online card, or never sends the Last Will, shows a dead agent online.
// Liveness is the broker's word; who the agent is and what key it holds
// is not. A caller that pinned a key for an agent_id (pairing) should
// also compare it with the card's.

// MaxListed bounds the agents a Directory keeps; cards of further agents
// are dropped.
const MaxListed = 10_000

// Listed is one agent of a Directory.
type Listed struct {
	AgentID  string
	SystemID string
	Card     Card
	// SignedAt is the card's timestamp; Seen when this directory took it.
	SignedAt, Seen time.Time
}

// Directory is the set of agents whose cards are on the broker.
type Directory struct {
	mu    sync.Mutex
	cards map[string]*Listed

	// Dropped counts cards refused (malformed, oversized, unsigned,
	// forged, under another agent's topic, another key, over MaxListed).
	Dropped atomic.Uint64
}

// NewDirectory returns an empty directory; Transport.Start fills it when
// the transport was given it with SetDirectory.
func NewDirectory() *Directory { return &Directory{cards: map[string]*Listed{}} }

// Cards is the filter {prefix}/agents/+/card.
func (t Topics) Cards() string { return t.Prefix + "/agents/+/card" }

// SetDirectory makes Start subscribe to every agent's card and keep them
// in d. Call it before Start.
func (t *Transport) SetDirectory(d *Directory) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dir = d
}

// subscribeCards registers d's subscription on c (Transport.Start).
func (t *Transport) subscribeCards(ctx context.Context, c *Client) error {
	if t.dir == nil {
		return nil
	}
	d := t.dir
	return c.SubscribeRetained(ctx, t.topics().Cards(), func(topic string, payload []byte) { d.Take(topic, payload) })
}

// Take takes one message of the card subscription: topic is
// {prefix}/agents/{agent_id}/card. It reports whether the card was kept
// (or, for an empty payload, the agent removed).
func (d *Directory) Take(topic string, payload []byte) bool {
	id, ok := cardTopicAgent(topic)
	if !ok {
		d.Dropped.Add(1)
		return false
	}
	if len(payload) == 0 {
		d.mu.Lock()
		delete(d.cards, id)
		d.mu.Unlock()
		return true
	}
	m, c, err := ParseCard(payload)
	if err != nil || m.Sender.AgentID != id {
		d.Dropped.Add(1)
		return false
	}
	signed, err := m.Time()
	if err != nil {
		d.Dropped.Add(1)
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.cards[id]
	switch {
	case old == nil && len(d.cards) >= MaxListed,
		old != nil && old.Card.PublicKey != c.PublicKey:
		d.Dropped.Add(1)
		return false
	}
	d.cards[id] = &Listed{AgentID: id, SystemID: m.Sender.SystemID, Card: *c, SignedAt: signed, Seen: time.Now()}
	return true
}

// cardTopicAgent is the agent_id level of .../agents/{agent_id}/card.
func cardTopicAgent(topic string) (string, bool) {
	rest, ok := strings.CutSuffix(topic, "/card")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 || !strings.HasSuffix(rest[:i], "agents") {
		return "", false
	}
	id := rest[i+1:]
	return id, validLevel(id)
}

// Counts is how many agents the directory holds and how many of them
// their cards say are online.
func (d *Directory) Counts() (agents, online int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.cards {
		if l.Card.Status == CardOnline {
			online++
		}
	}
	return len(d.cards), online
}

// List is the agents of the directory, by agent_id.
func (d *Directory) List() []Listed {
	d.mu.Lock()
	out := make([]Listed, 0, len(d.cards))
	for _, l := range d.cards {
		c := *l
		c.Card.TaskTypes = slices.Clone(c.Card.TaskTypes)
		c.Card.Capabilities = maps.Clone(c.Card.Capabilities)
		out = append(out, c)
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Listed) int { return strings.Compare(a.AgentID, b.AgentID) })
	return out
}
