package wire_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/synapse-edge/synapse/wire"
)

func TestNewMessage(t *testing.T) {
	from := wire.AgentRef{AgentID: "sys_a_000001", SystemID: "sys", Endpoint: "http://127.0.0.1:8080"}
	to := wire.AgentRef{AgentID: "sys_b_000002"}
	payload, err := wire.NewJSONPayload(map[string]any{"task_type": "echo"})
	if err != nil {
		t.Fatal(err)
	}
	local := time.FixedZone("UTC+8", 8*3600)
	tests := []struct {
		name string
		now  time.Time
		want string
	}{
		{"whole second", time.Date(2026, 5, 27, 16, 31, 0, 0, local), "2026-05-27T08:31:00.000Z"},
		{"sub-millisecond truncated", time.Date(2026, 5, 27, 8, 31, 0, 123_999_999, time.UTC), "2026-05-27T08:31:00.123Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := wire.NewMessage(wire.MsgTaskRequest, from, to, payload, tt.now)
			if m.Timestamp != tt.want {
				t.Errorf("timestamp = %s, want %s", m.Timestamp, tt.want)
			}
			if m.TPVersion != "1.0.0" {
				t.Errorf("tp_version = %s, want 1.0.0", m.TPVersion)
			}
			id, err := uuid.Parse(m.MessageID)
			if err != nil || id.Version() != 7 || len(m.MessageID) != 36 {
				t.Errorf("message_id %q is not a canonical UUID v7 (%v)", m.MessageID, err)
			}
			if m.MessageType != wire.MsgTaskRequest || m.Sender != from || m.Receiver != to || !m.Payload.Equal(payload) {
				t.Errorf("fields not as given: %+v", m)
			}
			if m.Signature != "" || m.TraceInfo != nil || m.CorrelationID != "" {
				t.Errorf("unexpected optional fields set: %+v", m)
			}
			if err := m.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
	t.Run("ids differ", func(t *testing.T) {
		now := time.Now()
		a := wire.NewMessage(wire.MsgAck, from, to, wire.RawPayload{}, now)
		b := wire.NewMessage(wire.MsgAck, from, to, wire.RawPayload{}, now)
		if a.MessageID == b.MessageID {
			t.Errorf("two messages share id %s", a.MessageID)
		}
	})
}

func TestMessageTypes(t *testing.T) {
	all := wire.MessageTypes()
	seen := map[wire.MessageType]bool{}
	p2p := 0
	for _, mt := range all {
		if seen[mt] {
			t.Errorf("%s listed twice", mt)
		}
		seen[mt] = true
		if !wire.IsKnownMessageType(mt) {
			t.Errorf("IsKnownMessageType(%s) = false", mt)
		}
		if matched, _ := regexp.MatchString(`^p2p:[a-z_]+$`, string(mt)); matched {
			p2p++
		}
	}
	if p2p != 17 {
		t.Errorf("got %d p2p types, want the 17 of seed 004 §2.1", p2p)
	}
	for _, mt := range []wire.MessageType{"negotiate_request", "negotiate_response", "error", "group:ballot", "p2p:human_decision"} {
		if !seen[mt] {
			t.Errorf("%s missing", mt)
		}
	}
	if wire.IsKnownMessageType("p2p:unknown") {
		t.Error("IsKnownMessageType(p2p:unknown) = true")
	}
}

type envTaskPayload struct {
	TaskType string         `json:"task_type"`
	Count    int64          `json:"count"`
	Note     string         `json:"note,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
}

func TestRawPayloadCodecs(t *testing.T) {
	in := envTaskPayload{TaskType: "echo", Count: 1 << 40, Note: "<b>&</b>", Extra: map[string]any{"z": "1", "a": "2"}}
	t.Run("json", func(t *testing.T) {
		p, err := wire.NewJSONPayload(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(p.Bytes()), `{"task_type":"echo","count":1099511627776,"note":"<b>&</b>","extra":{"a":"2","z":"1"}}`; got != want {
			t.Errorf("bytes = %s, want %s", got, want)
		}
		var out envTaskPayload
		if err := p.Decode(&out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Errorf("decoded %+v, want %+v", out, in)
		}
	})
	t.Run("msgpack uses json tags and is deterministic", func(t *testing.T) {
		p, err := wire.NewMsgpackPayload(in)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := msgpack.Unmarshal(p.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["task_type"]; !ok {
			t.Errorf("msgpack keys %v do not follow the json tags", m)
		}
		var out envTaskPayload
		if err := p.Decode(&out); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out, in) {
			t.Errorf("decoded %+v, want %+v", out, in)
		}
		for range 20 {
			q, err := wire.NewMsgpackPayload(in)
			if err != nil {
				t.Fatal(err)
			}
			if !q.Equal(p) {
				t.Fatalf("encodings differ: %x vs %x", q.Bytes(), p.Bytes())
			}
		}
	})
	t.Run("no payload", func(t *testing.T) {
		var p wire.RawPayload
		if !p.IsZero() || p.Codec() != wire.PayloadNone {
			t.Errorf("zero payload: IsZero %v codec %v", p.IsZero(), p.Codec())
		}
		var out any
		if err := p.Decode(&out); !errors.Is(err, wire.ErrNoPayload) {
			t.Errorf("Decode = %v, want ErrNoPayload", err)
		}
	})
}

func TestRawPayloadConstructorsRefuse(t *testing.T) {
	for _, b := range []string{``, `{`, `{"a":1}x`, `nul`, `{"a":1} {"b":2}`, "\"\xbd\""} {
		if _, err := wire.RawJSONPayload([]byte(b)); err == nil {
			t.Errorf("RawJSONPayload(%q) accepted", b)
		}
	}
	for _, h := range [][]byte{{}, {0x81}, {0x01, 0x02}, {0xc1}, {0xdd, 0xff, 0xff, 0xff, 0xff}} {
		if _, err := wire.RawMsgpackPayload(h); err == nil {
			t.Errorf("RawMsgpackPayload(%x) accepted", h)
		}
	}
	p, err := wire.RawJSONPayload([]byte("  [1, 2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(p.Bytes()); got != "[1, 2]" {
		t.Errorf("bytes = %q, want the value without surrounding whitespace", got)
	}
}

func TestRawPayloadConvert(t *testing.T) {
	// 2^53+1 is not a float64: it must survive as an integer.
	j, err := wire.RawJSONPayload([]byte(`{"big": 9007199254740993, "neg": -5, "f": 1.25, "s": "x", "l": [true, null]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := j.Convert(wire.PayloadMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	if m.Codec() != wire.PayloadMsgpack {
		t.Fatalf("codec = %v", m.Codec())
	}
	var got map[string]any
	if err := m.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["big"] != int64(9007199254740993) && got["big"] != uint64(9007199254740993) {
		t.Errorf("big = %#v, want 9007199254740993", got["big"])
	}
	if got["f"] != 1.25 {
		t.Errorf("f = %#v, want 1.25", got["f"])
	}
	back, err := m.Convert(wire.PayloadJSON)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(back.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip through msgpack: %s, want the value of %s", back.Bytes(), j.Bytes())
	}
	t.Run("same codec is the same bytes", func(t *testing.T) {
		same, err := j.Convert(wire.PayloadJSON)
		if err != nil || !same.Equal(j) {
			t.Errorf("Convert to own codec = %s, %v", same.Bytes(), err)
		}
	})
	t.Run("msgpack nil becomes JSON null", func(t *testing.T) {
		n, err := wire.RawMsgpackPayload([]byte{0xc0})
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Convert(wire.PayloadJSON)
		if err != nil || string(got.Bytes()) != "null" {
			t.Errorf("Convert = %q, %v; want null", got.Bytes(), err)
		}
	})
	t.Run("NaN cannot become JSON", func(t *testing.T) {
		n, err := wire.NewMsgpackPayload(math.NaN())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Convert(wire.PayloadJSON); err == nil {
			t.Error("converted NaN to JSON")
		}
	})
}

func TestValidate(t *testing.T) {
	valid := func() *wire.UnifiedSynapseMessage { return sigMinimalMessage() }
	tests := []struct {
		name   string
		change func(m *wire.UnifiedSynapseMessage)
		want   error
	}{
		{"valid", func(*wire.UnifiedSynapseMessage) {}, nil},
		{"minor and patch newer", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "1.7.42" }, nil},
		{"pre-release", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "1.1.0-rc.1+build.5" }, nil},
		{"hop count at the limit", func(m *wire.UnifiedSynapseMessage) { m.TraceInfo = &wire.TraceInfo{HopCount: 5} }, nil},
		{"offset timestamp", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T10:31:30+02:00" }, nil},
		{"no tp_version", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "" }, wire.ErrEnvelopeInvalid},
		{"major 2", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "2.0.0" }, wire.ErrVersionUnsupported},
		{"major 0", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "0.9.0" }, wire.ErrVersionUnsupported},
		{"not semver", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "1.0" }, wire.ErrEnvelopeInvalid},
		{"leading zero", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "01.0.0" }, wire.ErrEnvelopeInvalid},
		{"empty pre-release", func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "1.0.0-" }, wire.ErrEnvelopeInvalid},
		{"no message_id", func(m *wire.UnifiedSynapseMessage) { m.MessageID = "" }, wire.ErrEnvelopeInvalid},
		{"message_id not a UUID", func(m *wire.UnifiedSynapseMessage) { m.MessageID = "msg-1" }, wire.ErrEnvelopeInvalid},
		{"message_id braced", func(m *wire.UnifiedSynapseMessage) { m.MessageID = "{" + m.MessageID + "}" }, wire.ErrEnvelopeInvalid},
		{"no message_type", func(m *wire.UnifiedSynapseMessage) { m.MessageType = "" }, wire.ErrEnvelopeInvalid},
		{"no sender", func(m *wire.UnifiedSynapseMessage) { m.Sender = wire.AgentRef{SystemID: "s"} }, wire.ErrEnvelopeInvalid},
		{"no timestamp", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "" }, wire.ErrEnvelopeInvalid},
		{"bad timestamp", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27 08:31:30" }, wire.ErrEnvelopeInvalid},
		{"one-digit hour", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T8:31:30Z" }, wire.ErrEnvelopeInvalid},
		{"empty fraction", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T08:31:30.Z" }, wire.ErrEnvelopeInvalid},
		{"no zone", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T08:31:30.000" }, wire.ErrEnvelopeInvalid},
		{"short zone", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T08:31:30+0200" }, wire.ErrEnvelopeInvalid},
		{"nanoseconds", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "2026-05-27T08:31:30.123456789-07:30" }, nil},
		{"unix timestamp", func(m *wire.UnifiedSynapseMessage) { m.Timestamp = "1779870690" }, wire.ErrEnvelopeInvalid},
		{"hop count over", func(m *wire.UnifiedSynapseMessage) { m.TraceInfo = &wire.TraceInfo{HopCount: 6} }, wire.ErrHopLimit},
		{"hop count negative", func(m *wire.UnifiedSynapseMessage) { m.TraceInfo = &wire.TraceInfo{HopCount: -1} }, wire.ErrEnvelopeInvalid},
		{"line break in agent id", func(m *wire.UnifiedSynapseMessage) { m.Sender.AgentID = "a\nb" }, wire.ErrEnvelopeInvalid},
		{"tab in correlation id", func(m *wire.UnifiedSynapseMessage) { m.CorrelationID = "a\tb" }, wire.ErrEnvelopeInvalid},
		{"DEL in receiver", func(m *wire.UnifiedSynapseMessage) { m.Receiver.AgentID = "a\x7f" }, wire.ErrEnvelopeInvalid},
		{"invalid UTF-8", func(m *wire.UnifiedSynapseMessage) { m.MessageType = "p2p:\xff" }, wire.ErrEnvelopeInvalid},
		{"control char in trace", func(m *wire.UnifiedSynapseMessage) {
			m.TraceInfo = &wire.TraceInfo{OriginalProtocol: "x\x00"}
		}, wire.ErrEnvelopeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.change(m)
			err := m.Validate()
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("Validate = %v, want %v", err, tt.want)
			}
		})
	}
}
