package contracts

import (
	"errors"
	"testing"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// TestNegotiationFailed: how a failed automatic negotiation ends the
// delivery attempt of the message that needed it (see the package doc).
func TestNegotiationFailed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		class     transport.Class
		unreached bool
		code      wire.ErrorCode
	}{
		{"no answer", errors.New("dial tcp: connection refused"), transport.Retry, true, ""},
		{"not paired there yet", wire.Errorf(wire.CodeIDUnknownSender, "who?"), transport.Retry, true, wire.CodeIDUnknownSender},
		{"timed out", wire.Errorf(wire.CodeNegTimeout, "3 attempts"), transport.Retry, true, wire.CodeNegTimeout},
		{"peer unreachable", wire.Errorf(wire.CodePeerUnreachable, "502"), transport.Retry, true, wire.CodePeerUnreachable},
		{"refused", wire.Errorf(wire.CodeNegSecurity, "too low"), transport.Permanent, false, wire.CodeNegSecurity},
		{"no common transport", wire.Errorf(wire.CodeNegNoCommonTransp, "none"), transport.Permanent, false, wire.CodeNegNoCommonTransp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := negotiationFailed("peer-b", tc.err)
			var code wire.ErrorCode
			if o.Error != nil {
				code = o.Error.Code
			}
			if o.Class != tc.class || o.Unreached != tc.unreached || code != tc.code || !errors.Is(o.Err, transport.ErrNotDelivered) {
				t.Errorf("outcome %v unreached %v code %q err %v, want %v %v %q", o.Class, o.Unreached, code, o.Err, tc.class, tc.unreached, tc.code)
			}
		})
	}
	if peerNegotiates(wire.Errorf(wire.CodeCapabilityLacking, "answered 202 without a contract")) {
		t.Error("a peer that answers without a contract negotiates")
	}
	if !peerNegotiates(wire.Errorf(wire.CodeNegSecurity, "")) || !peerNegotiates(errors.New("timeout")) {
		t.Error("a refusal or a timeout means the peer does not negotiate")
	}
}
