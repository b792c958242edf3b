package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// envFuzzSeeds adds the envelopes of the known-answer vectors.
func envFuzzSeeds(f *testing.F, codec string) {
	var v sigVectorFile
	sigLoadVectors(f, "ed25519.json", &v, nil)
	for _, c := range v.Cases {
		switch {
		case c.Codec == codec && codec == "json":
			f.Add([]byte(c.Envelope))
		case c.Codec == codec:
			b, err := hex.DecodeString(c.EnvelopeHex)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// envFuzzRoundTrip checks the property both envelope fuzzers share: input
// that decodes re-encodes into bytes that decode to the same message, and
// encoding that message again gives the same bytes.
func envFuzzRoundTrip(t *testing.T, in []byte,
	decode func([]byte) (*wire.UnifiedSynapseMessage, error),
	encode func(*wire.UnifiedSynapseMessage) ([]byte, error)) {
	m, err := decode(in)
	if err != nil {
		if !errors.Is(err, wire.ErrEnvelopeInvalid) && !errors.Is(err, wire.ErrVersionUnsupported) && !errors.Is(err, wire.ErrHopLimit) {
			t.Fatalf("error %v wraps none of the envelope sentinels", err)
		}
		return
	}
	b, err := encode(m)
	if err != nil {
		t.Fatalf("encode accepted message: %v", err)
	}
	m2, err := decode(b)
	if err != nil {
		t.Fatalf("decode re-encoded %q: %v", b, err)
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip changed the message:\n first %+v\nsecond %+v", m, m2)
	}
	if !bytes.Equal(m2.Payload.Bytes(), m.Payload.Bytes()) {
		t.Fatalf("payload bytes changed: %q -> %q", m.Payload.Bytes(), m2.Payload.Bytes())
	}
	b2, err := encode(m2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("encoding is not stable:\n%q\n%q", b, b2)
	}
	if !bytes.Equal(wire.SigningInput(m), wire.SigningInput(m2)) {
		t.Fatal("signing input changed across the round trip")
	}
}

func FuzzEnvelopeJSON(f *testing.F) {
	envFuzzSeeds(f, "json")
	f.Add([]byte(envJSON()))
	f.Add([]byte(`{"tp_version":"1.0.0","message_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","message_type":"x","sender":{"agent_id":"\u00e9\ud800"},"timestamp":"2026-05-27T08:31:00Z","payload":  [ 1 ,"\u2028" ] }`))
	f.Fuzz(func(t *testing.T, in []byte) {
		envFuzzRoundTrip(t, in, wire.DecodeEnvelopeJSON, wire.EncodeEnvelopeJSON)
	})
}

func FuzzEnvelopeMsgpack(f *testing.F) {
	envFuzzSeeds(f, "msgpack")
	f.Fuzz(func(t *testing.T, in []byte) {
		envFuzzRoundTrip(t, in, wire.DecodeEnvelopeMsgpack, wire.EncodeEnvelopeMsgpack)
	})
}

// FuzzHMACHeader: VerifyHMAC never panics and fails only with its four
// sentinels, and what SignHMAC writes always verifies.
func FuzzHMACHeader(f *testing.F) {
	var v hmacVectorFile
	sigLoadVectors(f, "hmac.json", &v, nil)
	for _, c := range v.Cases {
		f.Add(c.Header, []byte(c.Body), []byte(c.Secrets[0]), c.T)
	}
	f.Add("t=1,v1=", []byte{}, []byte{}, int64(-1))
	f.Add("t=1779870660,v1=zz,v0=1, v1 = 0", []byte("x"), []byte("k"), int64(1<<62))
	f.Fuzz(func(t *testing.T, header string, body, secret []byte, unix int64) {
		now := time.Unix(1779870660, 0)
		err := wire.VerifyHMAC(header, [][]byte{secret, []byte("second")}, body, now, 0)
		if err != nil && !errors.Is(err, wire.ErrHMACMissing) && !errors.Is(err, wire.ErrHMACMalformed) &&
			!errors.Is(err, wire.ErrHMACStale) && !errors.Is(err, wire.ErrHMACMismatch) {
			t.Fatalf("VerifyHMAC(%q) = %v, not one of the sentinels", header, err)
		}
		if unix < 0 {
			unix = -(unix + 1)
		}
		at := time.Unix(unix, 0)
		h := wire.SignHMAC(secret, at, body)
		if err := wire.VerifyHMAC(h, [][]byte{[]byte("other"), secret}, body, at, 0); err != nil {
			t.Fatalf("VerifyHMAC(SignHMAC) = %v for %q", err, h)
		}
	})
}

// FuzzEnvelopeFields builds messages from arbitrary field values: a message
// that validates survives both codecs (the JSON payload byte for byte, the
// msgpack one after conversion), and its signature verifies after the trip.
func FuzzEnvelopeFields(f *testing.F) {
	f.Add("p2p:task_request", "edge_a", "edge_b", "corr", "2026-05-27T08:31:00.123Z", []byte(`{"a": [1, 2.5, "x"]}`), 1)
	f.Add("group:ballot", "\u00e9\"\\", "", "", "2026-05-27T08:31:00+02:00", []byte(`null`), 0)
	f.Add("error", "a", "b", "c\u2028", "2026-05-27T08:31:00Z", []byte(` "\u0000" `), 5)
	f.Fuzz(func(t *testing.T, msgType, sender, receiver, corr, ts string, payload []byte, hops int) {
		p, err := wire.RawJSONPayload(payload)
		if err != nil {
			return
		}
		m := sigMinimalMessage()
		m.MessageType, m.Sender.AgentID, m.Receiver.AgentID, m.CorrelationID, m.Timestamp = wire.MessageType(msgType), sender, receiver, corr, ts
		m.Payload = p
		m.TraceInfo = &wire.TraceInfo{HopCount: hops}
		if m.Validate() != nil {
			return
		}
		priv, pub := sigKey(t)
		for _, codec := range []string{"json", "msgpack"} {
			c := *m
			if codec == "msgpack" {
				if c.Payload, err = c.Payload.Convert(wire.PayloadMsgpack); err != nil {
					t.Fatalf("convert %q: %v", payload, err)
				}
			}
			if err := wire.Sign(&c, priv); err != nil {
				t.Fatal(err)
			}
			var got *wire.UnifiedSynapseMessage
			if codec == "json" {
				b, err := wire.EncodeEnvelopeJSON(&c)
				if err != nil {
					t.Fatal(err)
				}
				if got, err = wire.DecodeEnvelopeJSON(b); err != nil {
					t.Fatalf("decode %s: %v", b, err)
				}
			} else {
				b, err := wire.EncodeEnvelopeMsgpack(&c)
				if err != nil {
					t.Fatal(err)
				}
				if got, err = wire.DecodeEnvelopeMsgpack(b); err != nil {
					t.Fatalf("decode %x: %v", b, err)
				}
			}
			if !reflect.DeepEqual(got, &c) {
				t.Fatalf("%s round trip:\n got %+v\nwant %+v", codec, got, &c)
			}
			if err := wire.Verify(got, pub); err != nil {
				t.Fatalf("%s: Verify after round trip: %v", codec, err)
			}
		}
	})
}
