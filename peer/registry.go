package peer

import (
	"github.com/synapse-edge/synapse/registry"
)

// The registry this agent may be is package registry's Directory, which
// the network builds with the keys it pinned for its peers and opens
// with the store (Network.Directory serves it); the registration of this
// agent with another registry is package registry's Registrar
// (registrar.go).

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

// Directory is the registry this agent may be: registrations taken,
// FindByCapability, the directory sources (package registry).
func (n *Network) Directory() *registry.Directory { return n.dir }
