package contracts_test

import (
	"testing"

	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// TestRefusesContract: only a peer's TP-NEG010/011/012 with its status is
// a refusal of the contract named (renegotiate and send again); other
// refusals, and those codes under another status, are not.
func TestRefusesContract(t *testing.T) {
	answer := func(status int, code wire.ErrorCode) transport.Outcome {
		a := transport.Answer{Status: status}
		if code != "" {
			a.Error = wire.Errorf(code, "refused")
		}
		return transport.Classify(transport.Envelope, a)
	}
	for _, tc := range []struct {
		name string
		o    transport.Outcome
		want bool
	}{
		{"TP-NEG010 428", answer(428, wire.CodeNegContractMissing), true},
		{"TP-NEG011 404", answer(404, wire.CodeNegContractUnknown), true},
		{"TP-NEG012 410", answer(410, wire.CodeNegContractExpired), true},
		{"TP-NEG004 409", answer(409, wire.CodeNegSecurity), false},
		{"404 without a TPError", answer(404, ""), false},
		{"TP-NEG012 under 500", answer(500, wire.CodeNegContractExpired), false},
		{"delivered", answer(202, ""), false},
		{"no answer", transport.Unreachable(errString("connection refused")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contracts.RefusesContract(tc.o); got != tc.want {
				t.Errorf("RefusesContract = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExempt: negotiation, heartbeats, capability queries and errors need
// no contract; task and group messages do.
func TestExempt(t *testing.T) {
	for _, typ := range []wire.MessageType{wire.MsgNegotiateRequest, wire.MsgNegotiateResponse, wire.MsgHeartbeat,
		wire.MsgCapabilityQuery, wire.MsgCapabilityResponse, wire.MsgError} {
		if !contracts.Exempt(typ) {
			t.Errorf("%s needs a contract", typ)
		}
	}
	for _, typ := range []wire.MessageType{wire.MsgTaskRequest, wire.MsgTaskComplete, wire.MsgTaskCancel, wire.MsgAck} {
		if contracts.Exempt(typ) {
			t.Errorf("%s is exempt", typ)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
