package peer

import "github.com/synapse-edge/synapse/wire"

// TaskTypes are the task types caps declares, never nil: an agent's
// capabilities as seed 003 §4.3's AgentInfo lists them (peer/agents).
func TaskTypes(caps *wire.AgentCapabilities) []string {
	out := []string{}
	if caps == nil {
		return out
	}
	for _, t := range caps.SupportedTaskTypes {
		out = append(out, t.Type)
	}
	return out
}
