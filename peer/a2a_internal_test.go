package peer

import (
	"testing"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// TestA2ADestination: only a requester's task messages under a contract
// that selects the peer's a2a_jsonrpc endpoint go over A2A.
func TestA2ADestination(t *testing.T) {
	const self, peerA2A = "http://127.0.0.1:8080", "http://127.0.0.1:8081/a2a"
	a2aTo := func(ep string) *negotiate.Contract {
		return &negotiate.Contract{TransportMethod: negotiate.Transport{Protocol: negotiate.A2AJSONRPC, Endpoint: ep}}
	}
	for _, tt := range []struct {
		name    string
		c       *negotiate.Contract
		msgType wire.MessageType
		want    string
	}{
		{"no contract", nil, wire.MsgTaskRequest, ""},
		{"native contract", &negotiate.Contract{TransportMethod: negotiate.Transport{Protocol: negotiate.NativeTP, Endpoint: "http://127.0.0.1:8081"}}, wire.MsgTaskRequest, ""},
		{"request", a2aTo(peerA2A), wire.MsgTaskRequest, "a2a+" + peerA2A},
		{"cancel", a2aTo(peerA2A), wire.MsgTaskCancel, "a2a+" + peerA2A},
		{"info provided", a2aTo(peerA2A), wire.MsgTaskInfoProvided, "a2a+" + peerA2A},
		{"ack", a2aTo(peerA2A), wire.MsgTaskAck, "a2a+" + peerA2A},
		{"an executor's report", a2aTo(peerA2A), wire.MsgTaskComplete, ""},
		{"heartbeat", a2aTo(peerA2A), wire.MsgHeartbeat, ""},
		{"our own endpoint: the peer negotiated with us", a2aTo(self + "/a2a"), wire.MsgTaskRequest, ""},
		{"no endpoint", a2aTo(""), wire.MsgTaskRequest, ""},
		{"high level: sealed", func() *negotiate.Contract { c := a2aTo(peerA2A); c.SecurityLevel = negotiate.High; return c }(), wire.MsgTaskCancel, ""},
		{"private fields: sealed", func() *negotiate.Contract {
			c := a2aTo(peerA2A)
			c.SecurityLevel, c.PrivateFields = negotiate.Standard, map[string][]string{"echo": {"secret"}}
			return c
		}(), wire.MsgTaskCancel, ""},
	} {
		got, ok := a2aDestination(tt.c, tt.msgType, self)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
}
