package peer

import (
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// A contract that selects a2a_jsonrpc moves a delegated task's messages to
// the peer onto A2A: the requester's side of a task (its request, a
// cancel, the information a task waits for, the ack of its outcome) is
// sent, signed but not sealed, to "a2a+" + the contract's endpoint, the
// wire that package transport/a2aclient serves (the command registers it
// on the agent's transport). That wire turns each into an A2A call and
// brings the peer's task states back through agent.ReportFromPeer. Other
// messages go as envelopes, as under any contract; so does everything
// when the endpoint is this agent's own (the contract a peer negotiated
// with this agent: it is the A2A server of that contract), and under a
// contract that seals payloads (level high, or private fields: A2A carries
// no contract encryption, so they stay sealed envelopes).

// a2aCarried are the messages sent over A2A under an a2a_jsonrpc
// contract.
var a2aCarried = map[wire.MessageType]bool{
	wire.MsgTaskRequest: true, wire.MsgTaskCancel: true, wire.MsgTaskInfoProvided: true, wire.MsgTaskAck: true,
}

// a2aDestination is where a message of msgType goes under c, when c sends
// it over A2A.
func (n *Network) a2aDestination(c *negotiate.Contract, msgType wire.MessageType) (string, bool) {
	return a2aDestination(c, msgType, n.self().Endpoint)
}

// a2aDestination is the method for an agent whose endpoint is self.
func a2aDestination(c *negotiate.Contract, msgType wire.MessageType, self string) (string, bool) {
	if c == nil || c.TransportMethod.Protocol != negotiate.A2AJSONRPC || !a2aCarried[msgType] {
		return "", false
	}
	if c.SecurityLevel == negotiate.High || len(c.PrivateFields) > 0 {
		// The contract seals payloads (contracts' seal), which A2A cannot
		// carry: all of a task's messages stay envelopes, so that they
		// reach the same place.
		return "", false
	}
	ep := c.TransportMethod.Endpoint
	if ep == "" || ep == negotiate.EndpointFor(negotiate.A2AJSONRPC, self) {
		return "", false
	}
	return "a2a+" + ep, true
}
