package registry

import (
	"sync"

	"github.com/synapse-edge/synapse/internal/agentid"
)

// Directory sources. Besides the agents that register with it, an agent
// may know agents from elsewhere — the retained presence cards on an MQTT
// broker (transport/mqtt.Directory, wired by the serve command).
// FindByCapability lists them after the registry's own entries, each with
// Source set to the name of where it came from; the registry's entries
// say SourceRegistry. An entry of a source whose public key is not the
// one pinned here for that agent_id (a paired peer) is left out: a
// source is not trusted with identities. Pairing one of them is pairing
// as always (POST /agents with its endpoint): the key is fetched and
// pinned then.

// SourceRegistry is the Source of the entries registered with this agent.
const SourceRegistry = "registry"

// Source lists the agents a source knows now, with the status
// it gives them. It is called on every FindByCapability, so it answers
// from memory.
type Source func() []Entry

// sources are the named sources added to a Directory.
type sources struct {
	mu   sync.Mutex
	list []namedSource
}

type namedSource struct {
	name string
	list Source
}

// AddSource adds a source of directory entries named name (the
// Source of its entries, e.g. "mqtt").
func (d *Directory) AddSource(name string, src Source) {
	d.sources.mu.Lock()
	defer d.sources.mu.Unlock()
	d.sources.list = append(d.sources.list, namedSource{name: name, list: src})
}

// fromSources appends to out the entries of the sources q selects.
func (d *Directory) fromSources(q Query, out []Entry) []Entry {
	d.sources.mu.Lock()
	srcs := append([]namedSource(nil), d.sources.list...)
	d.sources.mu.Unlock()
	for _, s := range srcs {
		for _, e := range s.list() {
			if e.AgentCapabilities == nil || agentid.Check(e.AgentID) != nil {
				continue
			}
			if key, ok := d.o.PinnedKey(e.AgentID); ok && key != e.PublicKey {
				continue
			}
			e.Source, e.Capabilities = s.name, TaskTypes(e.AgentCapabilities)
			if q.matches(&e) {
				out = append(out, e)
			}
		}
	}
	return out
}
