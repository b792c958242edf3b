package peer

import (
	"context"

	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/wire"
)

// The registry this agent may be is package registry's Directory; the
// network serves it (the methods below) with the keys it pinned for its
// peers, and registers this agent with another registry (registrar.go).

// The registry's types and limits under the names the network has always
// given them.
type (
	DirectoryEntry  = registry.Entry
	DirectoryQuery  = registry.Query
	DirectorySource = registry.Source
	Registered      = registry.Registered
)

const (
	// RegistryAgentsPath is the path registrations are posted to.
	RegistryAgentsPath = registry.AgentsPath
	// MaxDirectory bounds the number of agents a registry keeps.
	MaxDirectory = registry.MaxEntries
	// SourceRegistry is the Source of the entries registered with this agent.
	SourceRegistry = registry.SourceRegistry
)

// newDirectory builds the network's directory (Open opens it); n.clock
// is set.
func (n *Network) newDirectory() *registry.Directory {
	return registry.New(registry.Options{Now: n.clock.Now, Logger: n.log,
		PinnedKey: func(id string) (string, bool) {
			if p := n.pairing.peers.get(id); p != nil {
				return p.rec.PublicKey, true
			}
			return "", false
		}})
}

// Register takes a registration envelope into the directory (package
// registry). Refusals are *wire.Error.
func (n *Network) Register(ctx context.Context, m *wire.UnifiedSynapseMessage) (*Registered, error) {
	return n.dir.Register(ctx, m)
}

// FindByCapability lists the registered agents q selects, by agent_id,
// then those of the directory sources.
func (n *Network) FindByCapability(q DirectoryQuery) ([]DirectoryEntry, error) {
	return n.dir.FindByCapability(q)
}

// Registration reads one entry of the directory.
func (n *Network) Registration(agentID string) (*DirectoryEntry, error) {
	return n.dir.Registration(agentID)
}

// Unregister removes an agent from the directory, and so its pinned key.
func (n *Network) Unregister(ctx context.Context, agentID string) error {
	return n.dir.Unregister(ctx, agentID)
}

// AddDirectorySource adds a source of directory entries named name (the
// Source of its entries, e.g. "mqtt"): the agents it knows, listed after
// the registry's own.
func (n *Network) AddDirectorySource(name string, src DirectorySource) { n.dir.AddSource(name, src) }
