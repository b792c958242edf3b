package negotiate_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

// FuzzDecodeNegotiate decodes arbitrary bytes as both negotiation payloads
// (JSON and msgpack), decides on every request that decodes, and checks
// that a decoded request survives a JSON round trip unchanged.
func FuzzDecodeNegotiate(f *testing.F) {
	f.Add([]byte(`{"candidate_transports":[{"protocol":"native_tp","endpoint":"http://127.0.0.1:1","version":"1.0.0"}],` +
		`"candidate_tiers":["tier_2_ai_generated","tier_3_natural_language"],"preferred_security_level":"high","session_purpose":"claim"}`))
	f.Add([]byte(`{"candidate_transports":[],"candidate_tiers":[]}`))
	f.Add([]byte(`{"revoke_contract_id":"01902c4f-1a2b-7000-8000-aaaa00000001"}`))
	f.Add([]byte(`{"contract_id":"x","negotiation_trace":[{"step":1,"selected":null}]}`))
	f.Add([]byte{0x81, 0xaf, 'c', 'a', 'n', 'd', 'i', 'd', 'a', 't', 'e', '_', 't', 'i', 'e', 'r', 's', 0x91, 0xa1, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		payloads := []wire.RawPayload{}
		if p, err := wire.RawJSONPayload(b); err == nil {
			payloads = append(payloads, p)
		}
		if p, err := wire.RawMsgpackPayload(b); err == nil {
			payloads = append(payloads, p)
		}
		for _, p := range payloads {
			if c, err := negotiate.DecodeContract(p); err == nil {
				_ = negotiate.CheckContract(&negotiate.Request{}, c, negotiate.Basic, now)
			}
			req, err := negotiate.DecodeRequest(p)
			if err != nil {
				continue
			}
			c, rej := negotiate.Decide(negotiate.Input{Request: req, Requester: "a", RequesterSystem: "x", Now: now, ContractID: contractID}, responder())
			if (c == nil) == (rej == nil) {
				t.Fatalf("Decide returned contract %v and rejection %v", c, rej)
			}
			if c != nil {
				if !c.SecurityLevel.AtLeast(req.Security()) {
					t.Fatalf("contract level %s below requested %s", c.SecurityLevel, req.Security())
				}
				if err := negotiate.CheckContract(req, c, req.Security(), now); err != nil {
					t.Fatalf("the requester refuses the responder's own contract: %v", err)
				}
			} else if _, ok := wire.Lookup(rej.Code); !ok {
				t.Fatalf("rejection code %q is not registered", rej.Code)
			}
			enc, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			p2, _ := wire.RawJSONPayload(enc)
			back, err := negotiate.DecodeRequest(p2)
			if err != nil {
				t.Fatalf("re-decode %s: %v", enc, err)
			}
			if !reflect.DeepEqual(normal(t, back), normal(t, req)) {
				t.Fatalf("round trip changed the request:\n%+v\n%+v", back, req)
			}
		}
	})
}

// normal is a request as JSON, so that nil and empty compare by meaning.
func normal(t *testing.T, r *negotiate.Request) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
