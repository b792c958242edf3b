package agent

import (
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// Responder is what this agent offers in a negotiation: tier 1's
// routines are Options.Tier1's. Its Profile is the protocol profile the
// agent declares (Capabilities).
func (a *Agent) Responder() negotiate.Responder {
	r := a.cfg.Load().Negotiation.Responder(a.identity.AgentID, a.identity.SystemID, a.identity.Endpoint)
	if t1 := a.t1; t1 != nil {
		r.Routine = func(id string) (negotiate.CapabilityRef, bool) {
			v, h, ok := t1.Routine(id)
			if !ok {
				return negotiate.CapabilityRef{}, false
			}
			return negotiate.CapabilityRef{CapabilityID: id, Version: v, DescriptorHash: h}, true
		}
		r.Routines = t1.Routines()
	}
	r.Compliant = wire.EvaluateCompliance(a.identity.AgentID, a.GetSupportedInterfaces()).Compliant
	return r
}
