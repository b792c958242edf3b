package wire_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/synapse-edge/synapse/wire"
)

// envJSON is a valid envelope with the given replacements applied to its
// text, to build one refusal case per line.
func envJSON(repl ...string) string {
	s := `{"tp_version":"1.0.0","message_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd",` +
		`"message_type":"p2p:ack","sender":{"agent_id":"a"},"receiver":{"agent_id":"b"},` +
		`"timestamp":"2026-05-27T08:31:00.000Z","payload":{"x":1},"trace_info":{"hop_count":1}}`
	return strings.NewReplacer(repl...).Replace(s)
}

func TestDecodeEnvelopeJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"valid", envJSON(), nil},
		{"unknown keys skipped", envJSON(`"payload"`, `"future":[{"a":[1,2]}],"payload"`), nil},
		{"null optional fields", envJSON(`"receiver":{"agent_id":"b"}`, `"correlation_id":null,"receiver":null,"x":null`, `"trace_info":{"hop_count":1}`, `"trace_info":null`), nil},
		{"trailing whitespace", envJSON() + " \n\t", nil},
		{"hop count 5", envJSON(`"hop_count":1`, `"hop_count":5`), nil},
		{"empty", ``, wire.ErrEnvelopeInvalid},
		{"array", `[1,2]`, wire.ErrEnvelopeInvalid},
		{"string", `"envelope"`, wire.ErrEnvelopeInvalid},
		{"null", `null`, wire.ErrEnvelopeInvalid},
		{"truncated", envJSON()[:60], wire.ErrEnvelopeInvalid},
		{"trailing data", envJSON() + `{}`, wire.ErrEnvelopeInvalid},
		{"unknown key truncated", `{"x":[1,`, wire.ErrEnvelopeInvalid},
		{"not UTF-8", envJSON(`"a"}`, "\"a\xff\"}"), wire.ErrEnvelopeInvalid},
		{"no tp_version", envJSON(`"tp_version":"1.0.0",`, ``), wire.ErrEnvelopeInvalid},
		{"no message_id", envJSON(`"message_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd",`, ``), wire.ErrEnvelopeInvalid},
		{"no message_type", envJSON(`"message_type":"p2p:ack",`, ``), wire.ErrEnvelopeInvalid},
		{"no sender", envJSON(`"sender":{"agent_id":"a"},`, ``), wire.ErrEnvelopeInvalid},
		{"null sender", envJSON(`"sender":{"agent_id":"a"}`, `"sender":null`), wire.ErrEnvelopeInvalid},
		{"sender not object", envJSON(`"sender":{"agent_id":"a"}`, `"sender":"a"`), wire.ErrEnvelopeInvalid},
		{"no sender.agent_id", envJSON(`"sender":{"agent_id":"a"}`, `"sender":{"system_id":"a"}`), wire.ErrEnvelopeInvalid},
		{"no timestamp", envJSON(`"timestamp":"2026-05-27T08:31:00.000Z",`, ``), wire.ErrEnvelopeInvalid},
		{"bad timestamp", envJSON(`08:31:00.000Z`, `8:31`), wire.ErrEnvelopeInvalid},
		{"message_id not UUID", envJSON(`0192f3a4-5b6c-7d8e-9f01-23456789abcd`, `1`), wire.ErrEnvelopeInvalid},
		{"number for string", envJSON(`"message_type":"p2p:ack"`, `"message_type":7`), wire.ErrEnvelopeInvalid},
		{"object for string", envJSON(`"message_type":"p2p:ack"`, `"message_type":{}`), wire.ErrEnvelopeInvalid},
		{"keys are case-sensitive", envJSON(`"message_id"`, `"Message_ID"`), wire.ErrEnvelopeInvalid},
		{"duplicate key", envJSON(`"payload"`, `"message_type":"p2p:nack","payload"`), wire.ErrEnvelopeInvalid},
		{"duplicate nested key", envJSON(`{"agent_id":"a"}`, `{"agent_id":"a","agent_id":"c"}`), wire.ErrEnvelopeInvalid},
		{"duplicate payload", envJSON(`"payload":{"x":1}`, `"payload":{"x":1},"payload":{"x":2}`), wire.ErrEnvelopeInvalid},
		{"line break in field", envJSON(`"agent_id":"b"`, `"agent_id":"b\nc"`), wire.ErrEnvelopeInvalid},
		{"major 2", envJSON(`"1.0.0"`, `"2.0.0"`), wire.ErrVersionUnsupported},
		{"version not semver", envJSON(`"1.0.0"`, `"v1"`), wire.ErrEnvelopeInvalid},
		{"hop count 6", envJSON(`"hop_count":1`, `"hop_count":6`), wire.ErrHopLimit},
		{"hop count huge", envJSON(`"hop_count":1`, `"hop_count":99999999999999999999999`), wire.ErrHopLimit},
		{"hop count negative", envJSON(`"hop_count":1`, `"hop_count":-1`), wire.ErrEnvelopeInvalid},
		{"hop count string", envJSON(`"hop_count":1`, `"hop_count":"1"`), wire.ErrEnvelopeInvalid},
		{"hop count fraction", envJSON(`"hop_count":1`, `"hop_count":1.5`), wire.ErrEnvelopeInvalid},
		{"hop count exponent", envJSON(`"hop_count":1`, `"hop_count":1e0`), wire.ErrEnvelopeInvalid},
		{"trace_info not object", envJSON(`{"hop_count":1}`, `[1]`), wire.ErrEnvelopeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := wire.DecodeEnvelopeJSON([]byte(tt.in))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if m.Sender.AgentID != "a" {
					t.Errorf("sender = %+v", m.Sender)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("decode = %v, want %v", err, tt.want)
			}
			if m != nil {
				t.Errorf("decode returned a message with an error")
			}
		})
	}
}

func TestDecodeEnvelopeSizeLimit(t *testing.T) {
	big := envJSON(`{"x":1}`, `{"x":"`+strings.Repeat("a", 2000)+`"}`)
	if _, err := wire.DecodeEnvelopeJSONLimit([]byte(big), 2000); !errors.Is(err, wire.ErrEnvelopeTooLarge) || !errors.Is(err, wire.ErrEnvelopeInvalid) {
		t.Errorf("JSON over the limit: %v, want ErrEnvelopeTooLarge and ErrEnvelopeInvalid", err)
	}
	if _, err := wire.DecodeEnvelopeJSONLimit([]byte(big), len(big)); err != nil {
		t.Errorf("JSON at the limit: %v", err)
	}
	m, err := wire.DecodeEnvelopeJSON([]byte(big))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeMsgpack(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wire.DecodeEnvelopeMsgpackLimit(b, len(b)-1); !errors.Is(err, wire.ErrEnvelopeTooLarge) {
		t.Errorf("msgpack over the limit: %v, want ErrEnvelopeTooLarge", err)
	}
	if _, err := wire.DecodeEnvelopeMsgpackLimit(b, len(b)); err != nil {
		t.Errorf("msgpack at the limit: %v", err)
	}
	huge := make([]byte, wire.MaxEnvelopeBytes+1)
	if _, err := wire.DecodeEnvelopeMsgpack(huge); !errors.Is(err, wire.ErrEnvelopeTooLarge) {
		t.Errorf("msgpack over MaxEnvelopeBytes: %v, want ErrEnvelopeTooLarge", err)
	}
}

// envMsgpack encodes a list of key/value pairs as a msgpack map in order.
// A value of type rawValue is written as is.
type rawValue []byte

func envMsgpack(t *testing.T, kv ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.EncodeMapLen(len(kv) / 2); err != nil {
		t.Fatal(err)
	}
	for _, x := range kv {
		var err error
		if r, ok := x.(rawValue); ok {
			_, err = buf.Write(r)
		} else {
			err = enc.Encode(x)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// envMsgpackFields is a valid envelope's pairs with key k's value replaced
// (or, with drop, the pair removed).
func envMsgpackFields(k string, v any, drop bool) []any {
	base := []any{
		"tp_version", "1.0.0",
		"message_id", "0192f3a4-5b6c-7d8e-9f01-23456789abcd",
		"message_type", "p2p:ack",
		"sender", map[string]any{"agent_id": "a"},
		"timestamp", "2026-05-27T08:31:00.000Z",
		"payload", map[string]any{"x": 1},
		"trace_info", map[string]any{"hop_count": 1},
	}
	var out []any
	for i := 0; i < len(base); i += 2 {
		if base[i] == k {
			if drop {
				continue
			}
			out = append(out, k, v)
			continue
		}
		out = append(out, base[i], base[i+1])
	}
	return out
}

func TestDecodeEnvelopeMsgpack(t *testing.T) {
	valid := envMsgpack(t, envMsgpackFields("", nil, false)...)
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"valid", valid, nil},
		{"unknown key skipped", envMsgpack(t, append(envMsgpackFields("", nil, false), "future", []any{1, "x"})...), nil},
		{"nil optional fields", envMsgpack(t, append(envMsgpackFields("", nil, false), "correlation_id", nil, "receiver", nil)...), nil},
		{"hop count as uint8", envMsgpack(t, envMsgpackFields("trace_info", rawValue(envMsgpack(t, "hop_count", rawValue{0xcc, 0x05})), false)...), nil},
		{"hop count as int64", envMsgpack(t, envMsgpackFields("trace_info", rawValue(envMsgpack(t, "hop_count", rawValue{0xd3, 0, 0, 0, 0, 0, 0, 0, 2})), false)...), nil},
		{"empty", nil, wire.ErrEnvelopeInvalid},
		{"nil", []byte{0xc0}, wire.ErrEnvelopeInvalid},
		{"array", []byte{0x92, 0x01, 0x02}, wire.ErrEnvelopeInvalid},
		{"ext wrapping a map", append([]byte{0xc7, byte(len(valid)), 0x05}, valid...), wire.ErrEnvelopeInvalid},
		{"trailing byte", append(bytes.Clone(valid), 0x00), wire.ErrEnvelopeInvalid},
		{"unknown key truncated", []byte{0x81, 0xa1, 'x', 0x92, 0x01}, wire.ErrEnvelopeInvalid},
		{"truncated", valid[:len(valid)-3], wire.ErrEnvelopeInvalid},
		{"map declares 2^32-1 entries", []byte{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'a'}, wire.ErrEnvelopeInvalid},
		{"string declares 2^32-1 bytes", envMsgpack(t, envMsgpackFields("message_type", rawValue{0xdb, 0xff, 0xff, 0xff, 0xff}, false)...), wire.ErrEnvelopeInvalid},
		{"deeply nested payload", envMsgpack(t, envMsgpackFields("payload", rawValue(append(bytes.Repeat([]byte{0x91}, 100000), 0x01)), false)...), wire.ErrEnvelopeInvalid},
		{"non-string key", append([]byte{0x81, 0x01}, 0x01), wire.ErrEnvelopeInvalid},
		{"no tp_version", envMsgpack(t, envMsgpackFields("tp_version", nil, true)...), wire.ErrEnvelopeInvalid},
		{"no sender", envMsgpack(t, envMsgpackFields("sender", nil, true)...), wire.ErrEnvelopeInvalid},
		{"no timestamp", envMsgpack(t, envMsgpackFields("timestamp", nil, true)...), wire.ErrEnvelopeInvalid},
		{"int for string", envMsgpack(t, envMsgpackFields("message_type", 7, false)...), wire.ErrEnvelopeInvalid},
		{"bin for string", envMsgpack(t, envMsgpackFields("message_type", []byte("p2p:ack"), false)...), wire.ErrEnvelopeInvalid},
		{"duplicate key", envMsgpack(t, append(envMsgpackFields("", nil, false), "message_type", "p2p:nack")...), wire.ErrEnvelopeInvalid},
		{"major 2", envMsgpack(t, envMsgpackFields("tp_version", "2.1.0", false)...), wire.ErrVersionUnsupported},
		{"hop count 6", envMsgpack(t, envMsgpackFields("trace_info", map[string]any{"hop_count": 6}, false)...), wire.ErrHopLimit},
		{"hop count max uint64", envMsgpack(t, envMsgpackFields("trace_info", map[string]any{"hop_count": uint64(1<<64 - 1)}, false)...), wire.ErrHopLimit},
		{"hop count 2^32+3", envMsgpack(t, envMsgpackFields("trace_info", map[string]any{"hop_count": int64(1<<32 + 3)}, false)...), wire.ErrHopLimit},
		{"hop count negative", envMsgpack(t, envMsgpackFields("trace_info", map[string]any{"hop_count": -3}, false)...), wire.ErrEnvelopeInvalid},
		{"hop count float", envMsgpack(t, envMsgpackFields("trace_info", map[string]any{"hop_count": 1.0}, false)...), wire.ErrEnvelopeInvalid},
		{"invalid UTF-8", envMsgpack(t, envMsgpackFields("message_type", "p2p:\xff", false)...), wire.ErrEnvelopeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := wire.DecodeEnvelopeMsgpack(tt.in)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if m.Sender.AgentID != "a" || m.Payload.Codec() != wire.PayloadMsgpack {
					t.Errorf("decoded %+v", m)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("decode = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	full := sigFullMessage(t)
	full.Signature = strings.Repeat("A", 86) + "=="
	mp := *full
	var err error
	if mp.Payload, err = full.Payload.Convert(wire.PayloadMsgpack); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		m      *wire.UnifiedSynapseMessage
		encode func(*wire.UnifiedSynapseMessage) ([]byte, error)
		decode func([]byte) (*wire.UnifiedSynapseMessage, error)
	}{
		{"json full", full, wire.EncodeEnvelopeJSON, wire.DecodeEnvelopeJSON},
		{"json minimal", sigMinimalMessage(), wire.EncodeEnvelopeJSON, wire.DecodeEnvelopeJSON},
		{"msgpack full", &mp, wire.EncodeEnvelopeMsgpack, wire.DecodeEnvelopeMsgpack},
		{"msgpack minimal", sigMinimalMessage(), wire.EncodeEnvelopeMsgpack, wire.DecodeEnvelopeMsgpack},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.encode(tt.m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.decode(b)
			if err != nil {
				t.Fatalf("decode: %v\n%x", err, b)
			}
			if !reflect.DeepEqual(got, tt.m) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.m)
			}
		})
	}
}

// A msgpack envelope from another library may encode its payload in forms
// this package would not choose (wide integers, map16 headers, unsorted
// keys); the bytes are kept and re-encoded exactly, so the signature holds.
func TestMsgpackKeepsForeignPayloadBytes(t *testing.T) {
	// {"z": int64 7, "a": [map16 {}]} with a wide integer and a map16.
	payload := []byte{0x82, 0xa1, 'z', 0xd3, 0, 0, 0, 0, 0, 0, 0, 7, 0xa1, 'a', 0x91, 0xde, 0x00, 0x00}
	priv, pub := sigKey(t)
	m := sigMinimalMessage()
	p, err := wire.RawMsgpackPayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	m.Payload = p
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	in := envMsgpack(t, "signature", m.Signature, "payload", rawValue(payload),
		"timestamp", m.Timestamp, "sender", map[string]any{"agent_id": m.Sender.AgentID},
		"message_type", m.MessageType, "message_id", m.MessageID, "tp_version", m.TPVersion)
	got, err := wire.DecodeEnvelopeMsgpack(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Payload.Bytes(), payload) {
		t.Fatalf("payload = %x, want %x", got.Payload.Bytes(), payload)
	}
	if err := wire.Verify(got, pub); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	out, err := wire.EncodeEnvelopeMsgpack(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, payload) {
		t.Errorf("re-encoded envelope %x lacks the payload bytes %x", out, payload)
	}
	again, err := wire.DecodeEnvelopeMsgpack(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Verify(again, pub); err != nil {
		t.Errorf("Verify after re-encoding: %v", err)
	}
	var v struct {
		Z int64 `json:"z"`
	}
	if err := again.Payload.Decode(&v); err != nil || v.Z != 7 {
		t.Errorf("Decode = %+v, %v; want z=7", v, err)
	}
}

// Writing an envelope in the other codec converts its payload, which
// changes the signed bytes: the receiver's Verify fails. Converting before
// signing is the way to send a msgpack envelope.
func TestCrossCodecSigning(t *testing.T) {
	priv, pub := sigKey(t)
	m := sigFullMessage(t)
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeMsgpack(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeEnvelopeMsgpack(b)
	if err != nil {
		t.Fatal(err)
	}
	var a, want any
	if err := got.Payload.Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := m.Payload.Decode(&want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normaliseNumbers(a), normaliseNumbers(want)) {
		t.Errorf("converted payload = %v, want %v", a, want)
	}
	if err := wire.Verify(got, pub); !errors.Is(err, wire.ErrBadSignature) {
		t.Errorf("Verify of a converted payload = %v, want ErrBadSignature", err)
	}
	if m.Payload, err = m.Payload.Convert(wire.PayloadMsgpack); err != nil {
		t.Fatal(err)
	}
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	if b, err = wire.EncodeEnvelopeMsgpack(m); err != nil {
		t.Fatal(err)
	}
	if got, err = wire.DecodeEnvelopeMsgpack(b); err != nil {
		t.Fatal(err)
	}
	if err := wire.Verify(got, pub); err != nil {
		t.Errorf("Verify after converting before signing: %v", err)
	}
}

// normaliseNumbers maps every number to float64 so JSON and msgpack
// decodings compare.
func normaliseNumbers(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normaliseNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normaliseNumbers(e)
		}
	case int8:
		return float64(v)
	case int16:
		return float64(v)
	case int32:
		return float64(v)
	case int64:
		return float64(v)
	case uint8:
		return float64(v)
	case uint16:
		return float64(v)
	case uint32:
		return float64(v)
	case uint64:
		return float64(v)
	}
	return x
}

func TestMarshalJSONEscapes(t *testing.T) {
	m := sigMinimalMessage()
	m.ConversationID = "quote \" backslash \\ <tag> é \u2028 \xff"
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// The envelope writer does not validate; the \xff becomes U+FFFD.
	got, err := wire.DecodeEnvelopeJSONLimit(b, 0)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if want := "quote \" backslash \\ <tag> é \u2028 \ufffd"; got.ConversationID != want {
		t.Errorf("conversation_id = %q, want %q", got.ConversationID, want)
	}
}

func BenchmarkDecodeEnvelopeJSON(b *testing.B) {
	var v sigVectorFile
	sigLoadVectors(b, "ed25519.json", &v, nil)
	in := []byte(v.Cases[0].Envelope)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.DecodeEnvelopeJSON(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeEnvelopeMsgpack(b *testing.B) {
	var v sigVectorFile
	sigLoadVectors(b, "ed25519.json", &v, nil)
	in, err := hex.DecodeString(v.Cases[1].EnvelopeHex)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.DecodeEnvelopeMsgpack(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeEnvelopeJSON(b *testing.B) {
	m := sigFullMessage(b)
	b.ReportAllocs()
	for b.Loop() {
		out, err := m.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

func BenchmarkEncodeEnvelopeMsgpack(b *testing.B) {
	m := sigFullMessage(b)
	var err error
	if m.Payload, err = m.Payload.Convert(wire.PayloadMsgpack); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := wire.EncodeEnvelopeMsgpack(m)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(out)))
	}
}

// TestDecodeEnvelopeCodes: DecodeEnvelope names each refusal with its
// registry code, in both codecs.
func TestDecodeEnvelopeCodes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		code       wire.ErrorCode
	}{
		{"major version", envJSON(`"1.0.0"`, `"2.0.0"`), wire.CodeVerUnsupported},
		{"hop limit", envJSON(`"hop_count":1`, `"hop_count":1000`), wire.CodeTraHopLimit},
		{"invalid UTF-8", envJSON(`{"x":1}`, "{\"x\":\"\xff\"}"), wire.CodeValUTF8},
		{"not an envelope", `{"tp_version":`, wire.CodeMessageFormatInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.DecodeEnvelope([]byte(tc.body), false)
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != tc.code {
				t.Fatalf("DecodeEnvelope = %v, want %s", err, tc.code)
			}
		})
	}
	m, err := wire.DecodeEnvelope([]byte(envJSON()), false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeMsgpack(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeEnvelope(b, true)
	if err != nil || got.MessageID != m.MessageID {
		t.Fatalf("msgpack: %v, %v", got, err)
	}
	if _, err := wire.DecodeEnvelope(b[:len(b)-3], true); !errors.As(err, new(*wire.Error)) {
		t.Fatalf("truncated msgpack: %v, want a TPError", err)
	}
}
