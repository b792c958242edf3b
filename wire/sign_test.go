package wire_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Known-answer vectors live in testdata/vectors. They were generated once by
// running the tests with SYNAPSE_UPDATE_VECTORS=1 and are checked, not
// regenerated, by every normal run.
const sigUpdateEnv = "SYNAPSE_UPDATE_VECTORS"

// sigVectorFile is the layout of testdata/vectors/ed25519.json.
type sigVectorFile struct {
	Description     string          `json:"description"`
	SeedHex         string          `json:"seed_hex"`
	PublicKeyHex    string          `json:"public_key_hex"`
	PublicKeyBase64 string          `json:"public_key_base64"`
	Cases           []sigVectorCase `json:"cases"`
}

type sigVectorCase struct {
	Name string `json:"name"`
	// Codec is "json" (Envelope holds the envelope text) or "msgpack"
	// (EnvelopeHex holds the envelope bytes).
	Codec         string `json:"codec"`
	Envelope      string `json:"envelope,omitempty"`
	EnvelopeHex   string `json:"envelope_hex,omitempty"`
	PayloadHex    string `json:"payload_hex"`
	PayloadSHA256 string `json:"payload_sha256"`
	SigningInput  string `json:"signing_input"`
	Signature     string `json:"signature"`
}

// sigSeed is the private key seed of RFC 8032 §7.1 TEST 1, so the key pair
// itself can be checked against the RFC.
const sigSeed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"

func sigKey(t testing.TB) (ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	seed, err := hex.DecodeString(sigSeed)
	if err != nil {
		t.Fatal(err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return priv, priv.Public().(ed25519.PublicKey)
}

// sigFullMessage is the message of the "full" vectors: every field set, a
// payload with spaces and non-ASCII text that must survive byte for byte.
func sigFullMessage(t testing.TB) *wire.UnifiedSynapseMessage {
	t.Helper()
	payload, err := wire.RawJSONPayload([]byte(`{"task_type": "echo", "payload": {"text": "h\u00e9llo <world> ü", "n": 42, "ratio": 0.5, "tags": ["a", "b"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	return &wire.UnifiedSynapseMessage{
		TPVersion:   "1.0.0",
		MessageID:   "0192f3a4-5b6c-7d8e-9f01-23456789abcd",
		MessageType: wire.MsgTaskRequest,
		Sender: wire.AgentRef{
			AgentID: "edge_gateway_a1b2c3", SystemID: "edge", Endpoint: "http://127.0.0.1:8080",
		},
		Receiver:            wire.AgentRef{AgentID: "edge_peer_d4e5f6"},
		Timestamp:           "2026-05-27T08:31:00.123Z",
		CorrelationID:       "0192f3a4-0000-7000-8000-000000000001",
		ConversationID:      "conversation-7",
		ProtocolContractRef: "01902c4f-1a2b-7000-8000-aaaa00000001",
		ContentType:         "application/json",
		Payload:             payload,
		TraceInfo:           &wire.TraceInfo{OriginalProtocol: "native_tp", OriginalMessageID: "0192f3a4-0000-7000-8000-000000000000", HopCount: 1},
	}
}

// sigMinimalMessage has only the required fields: no receiver, no payload.
func sigMinimalMessage() *wire.UnifiedSynapseMessage {
	return &wire.UnifiedSynapseMessage{
		TPVersion:   "1.0.0",
		MessageID:   "0192f3a4-5b6c-7d8e-9f01-000000000002",
		MessageType: wire.MsgHeartbeat,
		Sender:      wire.AgentRef{AgentID: "edge_gateway_a1b2c3"},
		Timestamp:   "2026-05-27T08:31:30.000Z",
	}
}

func sigGenerate(t *testing.T) sigVectorFile {
	t.Helper()
	priv, pub := sigKey(t)
	full := sigFullMessage(t)
	mp := *sigFullMessage(t)
	var err error
	if mp.Payload, err = full.Payload.Convert(wire.PayloadMsgpack); err != nil {
		t.Fatal(err)
	}
	v := sigVectorFile{
		Description:  "Ed25519 envelope signatures (synapse-sig-v1); see README.md",
		SeedHex:      sigSeed,
		PublicKeyHex: hex.EncodeToString(pub),
	}
	v.PublicKeyBase64 = base64.StdEncoding.EncodeToString(pub)
	for _, c := range []struct {
		name  string
		codec string
		m     *wire.UnifiedSynapseMessage
	}{
		{"full_json", "json", full},
		{"full_msgpack", "msgpack", &mp},
		{"minimal_json", "json", sigMinimalMessage()},
		{"minimal_msgpack", "msgpack", sigMinimalMessage()},
	} {
		if err := wire.Sign(c.m, priv); err != nil {
			t.Fatal(err)
		}
		vc := sigVectorCase{
			Name: c.name, Codec: c.codec,
			PayloadHex:    hex.EncodeToString(c.m.Payload.Bytes()),
			PayloadSHA256: wire.PayloadDigest(c.m.Payload),
			SigningInput:  string(wire.SigningInput(c.m)),
			Signature:     c.m.Signature,
		}
		if c.codec == "json" {
			b, err := c.m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			vc.Envelope = string(b)
		} else {
			b, err := wire.EncodeEnvelopeMsgpack(c.m)
			if err != nil {
				t.Fatal(err)
			}
			vc.EnvelopeHex = hex.EncodeToString(b)
		}
		v.Cases = append(v.Cases, vc)
	}
	return v
}

// sigLoadVectors reads a vector file into v, first rewriting it from gen
// when SYNAPSE_UPDATE_VECTORS=1 and gen is not nil.
func sigLoadVectors(t testing.TB, name string, v any, gen func() any) {
	t.Helper()
	path := filepath.Join("testdata", "vectors", name)
	if gen != nil && os.Getenv(sigUpdateEnv) == "1" {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(gen()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read vectors: %v (generate them with %s=1)", err, sigUpdateEnv)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
}

func sigDecodeCase(t *testing.T, c sigVectorCase) (*wire.UnifiedSynapseMessage, []byte) {
	t.Helper()
	switch c.Codec {
	case "json":
		m, err := wire.DecodeEnvelopeJSON([]byte(c.Envelope))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		return m, []byte(c.Envelope)
	case "msgpack":
		b, err := hex.DecodeString(c.EnvelopeHex)
		if err != nil {
			t.Fatal(err)
		}
		m, err := wire.DecodeEnvelopeMsgpack(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		return m, b
	}
	t.Fatalf("unknown codec %q", c.Codec)
	return nil, nil
}

func sigEncode(t *testing.T, codec string, m *wire.UnifiedSynapseMessage) []byte {
	t.Helper()
	var b []byte
	var err error
	if codec == "json" {
		b, err = m.MarshalJSON()
	} else {
		b, err = wire.EncodeEnvelopeMsgpack(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEd25519Vectors(t *testing.T) {
	var v sigVectorFile
	sigLoadVectors(t, "ed25519.json", &v, func() any { return sigGenerate(t) })
	priv, pub := sigKey(t)
	if got := hex.EncodeToString(pub); got != v.PublicKeyHex {
		t.Fatalf("public key = %s, want %s", got, v.PublicKeyHex)
	}
	// RFC 8032 §7.1 TEST 1.
	if want := "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"; v.PublicKeyHex != want {
		t.Fatalf("vector public key = %s, want RFC 8032 %s", v.PublicKeyHex, want)
	}
	if len(v.Cases) != 4 {
		t.Fatalf("got %d cases, want 4", len(v.Cases))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			m, encoded := sigDecodeCase(t, c)
			if got := hex.EncodeToString(m.Payload.Bytes()); got != c.PayloadHex {
				t.Errorf("payload bytes = %s, want %s", got, c.PayloadHex)
			}
			if got := wire.PayloadDigest(m.Payload); got != c.PayloadSHA256 {
				t.Errorf("payload sha256 = %s, want %s", got, c.PayloadSHA256)
			}
			if got := string(wire.SigningInput(m)); got != c.SigningInput {
				t.Errorf("signing input =\n%q\nwant\n%q", got, c.SigningInput)
			}
			if m.Signature != c.Signature {
				t.Errorf("envelope signature = %s, want %s", m.Signature, c.Signature)
			}
			if err := wire.Verify(m, pub); err != nil {
				t.Errorf("Verify: %v", err)
			}
			resigned := *m
			if err := wire.Sign(&resigned, priv); err != nil {
				t.Fatal(err)
			}
			if resigned.Signature != c.Signature {
				t.Errorf("Sign = %s, want %s", resigned.Signature, c.Signature)
			}
			if got := sigEncode(t, c.Codec, m); !bytes.Equal(got, encoded) {
				t.Errorf("re-encoded envelope differs:\n got %q\nwant %q", got, encoded)
			}
		})
	}
	t.Run("payload digest of the full message is codec specific", func(t *testing.T) {
		if v.Cases[0].PayloadSHA256 == v.Cases[1].PayloadSHA256 {
			t.Error("JSON and msgpack payloads hash alike; the vectors do not tell the codecs apart")
		}
	})
	t.Run("absent payload hashes the empty input", func(t *testing.T) {
		const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		if got := v.Cases[2].PayloadSHA256; got != empty {
			t.Errorf("minimal payload sha256 = %s, want %s", got, empty)
		}
		lines := strings.Split(v.Cases[2].SigningInput, "\n")
		if len(lines) != 10 || lines[5] != "" || lines[7] != "" || lines[8] != "" || lines[9] != empty {
			t.Errorf("minimal signing input %q: want 10 lines, empty receiver, correlation and contract lines", v.Cases[2].SigningInput)
		}
	})
}

func TestSigningInputLayout(t *testing.T) {
	m := sigFullMessage(t)
	got := string(wire.SigningInput(m))
	want := strings.Join([]string{
		"synapse-sig-v1", "1.0.0", "0192f3a4-5b6c-7d8e-9f01-23456789abcd", "p2p:task_request",
		"edge_gateway_a1b2c3", "edge_peer_d4e5f6", "2026-05-27T08:31:00.123Z",
		"0192f3a4-0000-7000-8000-000000000001", "01902c4f-1a2b-7000-8000-aaaa00000001",
		wire.PayloadDigest(m.Payload),
	}, "\n")
	if got != want {
		t.Errorf("SigningInput =\n%q\nwant\n%q", got, want)
	}
}

// sigSigned returns the full message signed with the vector key.
func sigSigned(t *testing.T) (*wire.UnifiedSynapseMessage, ed25519.PublicKey) {
	t.Helper()
	priv, pub := sigKey(t)
	m := sigFullMessage(t)
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	if err := wire.Verify(m, pub); err != nil {
		t.Fatalf("fresh signature does not verify: %v", err)
	}
	return m, pub
}

// flipBit flips the lowest bit of the first byte of s that stays a
// printable ASCII character when flipped.
func flipBit(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c^1 >= 0x20 && c^1 < 0x7f && c < 0x80 {
			b[i] = c ^ 1
			return string(b)
		}
	}
	return s + "x"
}

func TestVerifyDetectsEveryChange(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *wire.UnifiedSynapseMessage)
	}{
		{"tp_version", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "1.0.1" }},
		{"message_id", func(m *wire.UnifiedSynapseMessage) { m.MessageID = flipBit(m.MessageID) }},
		{"message_type", func(m *wire.UnifiedSynapseMessage) { m.MessageType = wire.MessageType(flipBit(string(m.MessageType))) }},
		{"sender.agent_id", func(m *wire.UnifiedSynapseMessage) { m.Sender.AgentID = flipBit(m.Sender.AgentID) }},
		{"receiver.agent_id", func(m *wire.UnifiedSynapseMessage) { m.Receiver.AgentID = flipBit(m.Receiver.AgentID) }},
		{"receiver removed", func(m *wire.UnifiedSynapseMessage) { m.Receiver = wire.AgentRef{} }},
		{"timestamp", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T08:31:00.124Z" }},
		{"timestamp same instant other form", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T08:31:00.123+00:00" }},
		{"correlation_id", func(m *wire.UnifiedSynapseMessage) { m.CorrelationID = flipBit(m.CorrelationID) }},
		{"correlation_id removed", func(m *wire.UnifiedSynapseMessage) { m.CorrelationID = "" }},
		{"protocol_contract_ref", func(m *wire.UnifiedSynapseMessage) { m.ProtocolContractRef = flipBit(m.ProtocolContractRef) }},
		{"payload bit", func(m *wire.UnifiedSynapseMessage) {
			b := bytes.Clone(m.Payload.Bytes())
			i := bytes.IndexByte(b, '4') // in "42"
			b[i] ^= 1
			p, err := wire.RawJSONPayload(b)
			if err != nil {
				panic(err)
			}
			m.Payload = p
		}},
		{"payload whitespace", func(m *wire.UnifiedSynapseMessage) {
			p, err := wire.RawJSONPayload(bytes.Replace(m.Payload.Bytes(), []byte(": "), []byte(":"), 1))
			if err != nil {
				panic(err)
			}
			m.Payload = p
		}},
		{"payload removed", func(m *wire.UnifiedSynapseMessage) { m.Payload = wire.RawPayload{} }},
		{"signature bit", func(m *wire.UnifiedSynapseMessage) { m.Signature = flipBit(m.Signature) }},
		{"signature truncated", func(m *wire.UnifiedSynapseMessage) { m.Signature = m.Signature[:80] }},
		{"signature not base64", func(m *wire.UnifiedSynapseMessage) { m.Signature = strings.Repeat("!", 88) }},
		{"signature missing", func(m *wire.UnifiedSynapseMessage) { m.Signature = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, pub := sigSigned(t)
			tt.change(m)
			if err := wire.Verify(m, pub); !errors.Is(err, wire.ErrBadSignature) {
				t.Errorf("Verify = %v, want ErrBadSignature", err)
			}
		})
	}
	t.Run("other key", func(t *testing.T) {
		m, _ := sigSigned(t)
		other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey)
		if err := wire.Verify(m, other); !errors.Is(err, wire.ErrBadSignature) {
			t.Errorf("Verify = %v, want ErrBadSignature", err)
		}
	})
	t.Run("short public key", func(t *testing.T) {
		m, pub := sigSigned(t)
		if err := wire.Verify(m, pub[:31]); !errors.Is(err, wire.ErrBadSignature) {
			t.Errorf("Verify = %v, want ErrBadSignature", err)
		}
	})
	t.Run("unsigned fields may change", func(t *testing.T) {
		m, pub := sigSigned(t)
		m.ConversationID = "other"
		m.ContentType = "text/plain"
		m.Sender.Endpoint = "http://127.0.0.1:9"
		m.TraceInfo.HopCount = 2
		if err := wire.Verify(m, pub); err != nil {
			t.Errorf("Verify = %v, want nil (fields outside the signing input)", err)
		}
	})
}

// A line break inside a field could move text between lines of the signing
// input and keep the signature valid; both sides refuse it.
func TestSignatureRefusesLineBreaks(t *testing.T) {
	priv, pub := sigKey(t)
	a := sigMinimalMessage()
	a.MessageType = "p2p:ack\nx"
	a.Sender.AgentID = "y"
	if err := wire.Sign(a, priv); !errors.Is(err, wire.ErrEnvelopeInvalid) {
		t.Fatalf("Sign = %v, want ErrEnvelopeInvalid", err)
	}
	// Sign the lines of a legitimate message, then present them split
	// differently: the signing input is the same, Verify must still fail.
	b := sigMinimalMessage()
	b.MessageType = "p2p:ack"
	b.Sender.AgentID = "x\ny"
	legit := sigMinimalMessage()
	legit.MessageType = "p2p:ack\nx"
	legit.Sender.AgentID = "y"
	if !bytes.Equal(wire.SigningInput(b), wire.SigningInput(legit)) {
		t.Fatal("test premise: the two splits should give the same signing input")
	}
	b.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, wire.SigningInput(b)))
	if err := wire.Verify(b, pub); !errors.Is(err, wire.ErrBadSignature) {
		t.Errorf("Verify = %v, want ErrBadSignature", err)
	}
}

func TestSignRefusesBadKey(t *testing.T) {
	m := sigMinimalMessage()
	if err := wire.Sign(m, make([]byte, 10)); err == nil {
		t.Error("Sign with a 10-byte key succeeded")
	}
	if m.Signature != "" {
		t.Errorf("signature set to %q after a failed Sign", m.Signature)
	}
}

// The verifier hashes the payload bytes it received: an envelope written by
// another implementation, with its own key order and whitespace inside and
// around the payload, verifies, and still verifies after this package
// decodes and re-encodes it, because the payload bytes are kept. Normalising
// the payload's whitespace (as a generic JSON re-encoder would) breaks it.
func TestSignatureSurvivesReencodingWithRawPayload(t *testing.T) {
	priv, pub := sigKey(t)
	const rawPayload = "{ \"b\" :\t[1,  2 ,3] ,\n \"a\": \"\\u0041\" }"
	m := sigMinimalMessage()
	p, err := wire.RawJSONPayload([]byte(rawPayload))
	if err != nil {
		t.Fatal(err)
	}
	m.Payload = p
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	foreign := "{\n  \"payload\" :  " + rawPayload + " ,\n" +
		"  \"signature\": \"" + m.Signature + "\",\n" +
		"  \"timestamp\": \"" + m.Timestamp + "\", \"sender\": { \"agent_id\" : \"" + m.Sender.AgentID + "\" },\n" +
		"  \"message_type\": \"p2p:heartbeat\", \"message_id\": \"" + m.MessageID + "\",\n" +
		"  \"tp_version\": \"1.0.0\", \"x_extension\": {\"ignored\": true}\n}\n"

	got, err := wire.DecodeEnvelopeJSON([]byte(foreign))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Payload.Bytes()) != rawPayload {
		t.Fatalf("payload = %q, want the received %q", got.Payload.Bytes(), rawPayload)
	}
	if err := wire.Verify(got, pub); err != nil {
		t.Fatalf("Verify foreign envelope: %v", err)
	}

	b, err := got.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	again, err := wire.DecodeEnvelopeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Verify(again, pub); err != nil {
		t.Errorf("Verify after decode/encode/decode: %v", err)
	}

	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(foreign)); err != nil {
		t.Fatal(err)
	}
	normalised, err := wire.DecodeEnvelopeJSON(compact.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Verify(normalised, pub); !errors.Is(err, wire.ErrBadSignature) {
		t.Errorf("Verify after compacting the payload = %v, want ErrBadSignature", err)
	}
}

func TestCheckTimestamp(t *testing.T) {
	m := sigMinimalMessage() // 2026-05-27T08:31:30.000Z
	ts, err := m.Time()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		now    time.Time
		window time.Duration
		want   error
	}{
		{"same instant", ts, 0, nil},
		{"300 s later", ts.Add(300 * time.Second), 0, nil},
		{"300 s earlier", ts.Add(-300 * time.Second), 0, nil},
		{"301 s later", ts.Add(301 * time.Second), 0, wire.ErrStaleTimestamp},
		{"301 s earlier", ts.Add(-301 * time.Second), 0, wire.ErrStaleTimestamp},
		{"explicit window", ts.Add(11 * time.Second), 10 * time.Second, wire.ErrStaleTimestamp},
		{"far future clock", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0, wire.ErrStaleTimestamp},
		{"zero clock", time.Time{}, 0, wire.ErrStaleTimestamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wire.CheckTimestamp(m, tt.now, tt.window)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("CheckTimestamp = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("offset form", func(t *testing.T) {
		o := sigMinimalMessage()
		o.Timestamp = "2026-05-27T10:31:30+02:00"
		if err := wire.CheckTimestamp(o, ts, 0); err != nil {
			t.Errorf("CheckTimestamp = %v, want nil", err)
		}
	})
	t.Run("unparsable", func(t *testing.T) {
		o := sigMinimalMessage()
		o.Timestamp = "yesterday"
		if err := wire.CheckTimestamp(o, ts, 0); !errors.Is(err, wire.ErrEnvelopeInvalid) {
			t.Errorf("CheckTimestamp = %v, want ErrEnvelopeInvalid", err)
		}
	})
}

func BenchmarkSign(b *testing.B) {
	priv, _ := sigKey(b)
	m := sigFullMessage(b)
	b.SetBytes(int64(len(m.Payload.Bytes())))
	b.ReportAllocs()
	for b.Loop() {
		if err := wire.Sign(m, priv); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	priv, pub := sigKey(b)
	m := sigFullMessage(b)
	if err := wire.Sign(m, priv); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(m.Payload.Bytes())))
	b.ReportAllocs()
	for b.Loop() {
		if err := wire.Verify(m, pub); err != nil {
			b.Fatal(err)
		}
	}
}
