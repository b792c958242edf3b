package peer

import (
	"github.com/synapse-edge/synapse/peer/pins"
	"github.com/synapse-edge/synapse/transport"
)

// TLS certificates pinned at pairing. A peer paired over https with a
// fingerprint (PairOptions.TLSFingerprint: the SHA-256 that `synapse cert
// init` prints on the other agent) keeps it in its record; every message
// for its endpoint then carries it (transport.Message.TLSPin), and the
// transport accepts exactly that certificate, with no CA. Another
// certificate is refused like a changed Ed25519 key: nothing is sent, the
// log says which certificate came and which is pinned, and the outbox
// keeps the messages (the refusal is "the peer could not be reached",
// retriable). Pairing again with the new fingerprint (synapse peer add
// ENDPOINT --fingerprint NEW) re-pins it, and what waited goes.
//
// A connection already open when the peer changes its certificate stays
// until it closes (the peer's idle timeout): the pin is checked at each
// handshake, which is where TLS authenticates.

// PairOptions are what an operator adds to pairing.
type PairOptions struct {
	// TLSFingerprint pins the TLS certificate of an https endpoint: hex
	// SHA-256, with or without colons. Empty keeps the pin the peer has,
	// if any, and otherwise verifies the endpoint against the CAs.
	TLSFingerprint string `json:"tls_fingerprint,omitempty" msgpack:"tls_fingerprint,omitempty"`
}

// check normalizes o for endpoint.
func (o PairOptions) check(endpoint string) (PairOptions, error) {
	fp, err := pins.Check(endpoint, o.TLSFingerprint)
	return PairOptions{TLSFingerprint: fp}, err
}

// setPins fills the pin table from the peers of m; called with the
// peers' lock held whenever a record's endpoint or pin changes.
func (pg *Pairing) setPins(m map[string]*peer) {
	byEndpoint := map[string]pins.Pin{}
	for _, p := range m {
		if p.rec.TLSFingerprint != "" {
			byEndpoint[p.rec.Endpoint] = pins.Pin{Fingerprint: p.rec.TLSFingerprint, Peer: p.rec.AgentID}
		}
	}
	pg.pins.Set(byEndpoint)
}

// pinTLS sets the TLSPin of a message for a peer, unless it has one.
func (pg *Pairing) pinTLS(m *transport.Message) {
	if m.TLSPin == "" && m.Kind != transport.Callback {
		m.TLSPin = pg.pins.Of(m.To).Fingerprint
	}
}

// checkPinned logs a send refused because the destination's certificate
// is not the pinned one: at Warn the first time a certificate is refused
// under a pin, at Debug while it stays the same.
func (pg *Pairing) checkPinned(m *transport.Message, o transport.Outcome) {
	if m.TLSPin == "" {
		return
	}
	mm, news := pg.pins.Outcome(m.TLSPin, o.Delivered(), o.Err)
	if mm == nil {
		return
	}
	log := pg.log.Debug
	if news {
		log = pg.log.Warn
	}
	log("a peer's TLS certificate is not the one pinned at pairing: nothing is sent to it, its messages wait in the outbox; if the change is expected, pin the new one with 'synapse peer add ENDPOINT --fingerprint NEW'",
		"peer", pg.pins.Of(m.To).Peer, "to", m.To, "kind", m.Kind, "reason", "tls_certificate_changed", "got", mm.Got, "pinned", mm.Pinned)
}
