package peer

import (
	"time"

	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/wire"
)

// newRegistrar is package registry's registrar for the configured
// registry section: it registers this agent, signed with its key, with
// what it declares and its load (its heartbeat's), through the network's
// send (and so under the registry's TLS pin, if it is a paired peer).
func (n *Network) newRegistrar(rc *RegistryConfig) *registry.Registrar {
	return registry.NewRegistrar(registry.RegistrarOptions{
		URL: rc.URL, Token: rc.Token, TokenEnv: rc.TokenEnv,
		Interval: rc.HeartbeatInterval(),
		Sender:   n.self(),
		Registration: func() wire.Registration {
			hb := n.pairing.heartbeat()
			return wire.Registration{Identity: n.a.Identity(), Capabilities: n.a.Capabilities(), Interfaces: n.a.GetSupportedInterfaces(),
				Status: hb.Status, ActiveTasks: hb.ActiveTasks, MaxTasks: hb.MaxTasks}
		},
		Sign: n.a.Sign,
		Send: n.send,
		Now:  n.clock.Now,
		AfterFunc: func(d time.Duration, f func()) func() {
			t := n.clock.AfterFunc(d, f)
			return func() { t.Stop() }
		},
		Changes: n.a.CapabilityChanges(),
		Logger:  n.log,
	})
}
