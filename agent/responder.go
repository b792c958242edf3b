package agent

import (
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// Responder is what this agent offers in a negotiation. Its Profile is
// the protocol profile the agent declares (Capabilities).
func (a *Agent) Responder() negotiate.Responder {
	reg := a.t1.Registry()
	r := a.cfg.Load().Negotiation.Responder(a.identity.AgentID, a.identity.SystemID, a.identity.Endpoint)
	r.Routine = func(id string) (negotiate.CapabilityRef, bool) {
		d, ok := reg.Get(id)
		if !ok {
			return negotiate.CapabilityRef{}, false
		}
		return negotiate.CapabilityRef{CapabilityID: d.CapabilityID, Version: d.Version, DescriptorHash: d.Hash()}, true
	}
	r.Routines = len(reg.List())
	r.Compliant = wire.EvaluateCompliance(a.identity.AgentID, a.GetSupportedInterfaces()).Compliant
	return r
}
