package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Envelope codecs.
//
// JSON: one object. Keys are matched exactly (case-sensitive); unknown keys
// are skipped (a newer MINOR may add fields); a known key given twice is
// refused, so that no two readers can disagree on which value was signed.
// String fields take a string or null (null = absent); hop_count an integer.
// The payload is kept as the exact bytes of its value (json.RawMessage). The
// whole input must be UTF-8 and nothing but whitespace may follow the object.
//
// msgpack: one map with the same string keys and the same rules; string
// fields are msgpack str (or nil), hop_count any msgpack integer, and the
// payload is kept as the exact bytes of its value. Input is checked with
// CheckMsgpack before decoding and no byte may follow the map.
//
// Both writers emit keys in the order of SPEC §3 and leave out empty
// optional fields, a zero receiver, a nil trace_info and a zero payload. The
// payload is written byte for byte when it is already in the writer's codec
// and converted (RawPayload.Convert) when it is not.

// DecodeEnvelopeJSON decodes and validates a JSON envelope of at most
// MaxEnvelopeBytes.
func DecodeEnvelopeJSON(b []byte) (*UnifiedSynapseMessage, error) {
	return DecodeEnvelopeJSONLimit(b, MaxEnvelopeBytes)
}

// DecodeEnvelopeJSONLimit decodes and validates a JSON envelope of at most
// maxBytes bytes (no limit when maxBytes <= 0: only for input the caller has
// already bounded). The message does not share memory with b.
func DecodeEnvelopeJSONLimit(b []byte, maxBytes int) (*UnifiedSynapseMessage, error) {
	if err := envCheckSize(b, maxBytes); err != nil {
		return nil, err
	}
	if err := CheckUTF8(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnvelopeInvalid, err)
	}
	m := new(UnifiedSynapseMessage)
	if err := m.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeEnvelope decodes a JSON (or, with msgpack, msgpack) envelope and
// maps decoding errors to the registry: message_format_invalid, TP-VER001,
// TP-TRA001, TP-VAL002.
func DecodeEnvelope(body []byte, msgpack bool) (*UnifiedSynapseMessage, error) {
	var m *UnifiedSynapseMessage
	var err error
	if msgpack {
		m, err = DecodeEnvelopeMsgpack(body)
	} else {
		m, err = DecodeEnvelopeJSON(body)
	}
	switch {
	case err == nil:
		return m, nil
	case errors.Is(err, ErrVersionUnsupported):
		return nil, Errorf(CodeVerUnsupported, "%v", err)
	case errors.Is(err, ErrHopLimit):
		return nil, Errorf(CodeTraHopLimit, "%v", err)
	case errors.Is(err, ErrInvalidUTF8):
		return nil, Errorf(CodeValUTF8, "envelope: %v", err)
	}
	return nil, Errorf(CodeMessageFormatInvalid, "%v", err)
}

// EncodeEnvelopeJSON is m.MarshalJSON.
func EncodeEnvelopeJSON(m *UnifiedSynapseMessage) ([]byte, error) { return m.MarshalJSON() }

// DecodeEnvelopeMsgpack decodes and validates a msgpack envelope of at most
// MaxEnvelopeBytes.
func DecodeEnvelopeMsgpack(b []byte) (*UnifiedSynapseMessage, error) {
	return DecodeEnvelopeMsgpackLimit(b, MaxEnvelopeBytes)
}

// DecodeEnvelopeMsgpackLimit decodes and validates a msgpack envelope of at
// most maxBytes bytes (no limit when maxBytes <= 0). The message does not
// share memory with b.
func DecodeEnvelopeMsgpackLimit(b []byte, maxBytes int) (*UnifiedSynapseMessage, error) {
	if err := envCheckSize(b, maxBytes); err != nil {
		return nil, err
	}
	if err := CheckMsgpack(b, DefaultMsgpackLimits); err != nil {
		if errors.Is(err, ErrInvalidUTF8) {
			return nil, fmt.Errorf("%w: %w", ErrEnvelopeInvalid, err)
		}
		return nil, invalidf("%v", err)
	}
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	m := new(UnifiedSynapseMessage)
	if err := m.DecodeMsgpack(dec); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, invalidf("%d bytes after the envelope", r.Len())
	}
	return m, nil
}

// EncodeEnvelopeMsgpack writes m as a msgpack map.
func EncodeEnvelopeMsgpack(m *UnifiedSynapseMessage) ([]byte, error) {
	var buf bytes.Buffer
	if err := m.EncodeMsgpack(msgpack.NewEncoder(&buf)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func envCheckSize(b []byte, maxBytes int) error {
	if maxBytes > 0 && len(b) > maxBytes {
		return fmt.Errorf("%w: %w: %d bytes, limit %d", ErrEnvelopeInvalid, ErrEnvelopeTooLarge, len(b), maxBytes)
	}
	return nil
}

// Key bits, to refuse a key given twice; 0 is an unknown key.
const (
	envKeyTPVersion = 1 << iota
	envKeyMessageID
	envKeyMessageType
	envKeySender
	envKeyReceiver
	envKeyTimestamp
	envKeyCorrelationID
	envKeyConversationID
	envKeyContractRef
	envKeyContentType
	envKeyPayload
	envKeyTraceInfo
	envKeySignature
)

// The keys of the envelope's objects, each list in the order of its
// bits: the top level (the constants above), an agent, the trace info.
var (
	envTopKeys = []string{"tp_version", "message_id", "message_type", "sender", "receiver",
		"timestamp", "correlation_id", "conversation_id", "protocol_contract_ref",
		"content_type", "payload", "trace_info", "signature"}
	envAgentKeys = []string{"agent_id", "system_id", "endpoint"}
	envTraceKeys = []string{"original_protocol", "original_message_id", "hop_count"}
)

// envTopKey maps a top-level key to its bit (the order of the constants).
func envTopKey(key string) int { return envKeyBit(key, envTopKeys...) }

// envKeyBit is 1<<i for the i-th of keys equal to k, 0 when none is.
func envKeyBit(k string, keys ...string) int {
	for i, key := range keys {
		if k == key {
			return 1 << i
		}
	}
	return 0
}

// envString is the string field of a top-level key bit.
func (m *UnifiedSynapseMessage) envString(bit int) *string {
	switch bit {
	case envKeyTPVersion:
		return &m.TPVersion
	case envKeyMessageID:
		return &m.MessageID
	case envKeyMessageType:
		return (*string)(&m.MessageType)
	case envKeyTimestamp:
		return &m.Timestamp
	case envKeyCorrelationID:
		return &m.CorrelationID
	case envKeyConversationID:
		return &m.ConversationID
	case envKeyContractRef:
		return &m.ProtocolContractRef
	case envKeyContentType:
		return &m.ContentType
	case envKeySignature:
		return &m.Signature
	}
	return nil
}

// envReader is what the shared decoder needs from a codec.
type envReader interface {
	// open reads the start of an object (map) and how many entries it has
	// when the codec says (msgpack); null (nil) reports present=false.
	// next then reads key i (0 first) of that object, leaving the reader
	// at its value, and ok=false at the object's end. A walk of keys, not
	// callbacks, so that reading an object allocates nothing.
	open() (present bool, entries int, err error)
	next(i, entries int) (key string, ok bool, err error)
	// str reads a string; null (nil) is "".
	str(p *string) error
	// hopCount reads an integer or null, clamped to the int32 range (values
	// beyond it are refused either way, and int is 32 bits on some targets).
	hopCount() (int, error)
	// payload reads any value and keeps its exact bytes.
	payload() (RawPayload, error)
	skip() error
}

// envObject reads an object of r, calling field for each key with the
// reader at its value: every key's error wrapped in ErrEnvelopeInvalid,
// and a key given twice refused; key maps a key to its bit (0 = unknown,
// skipped). Null (nil) reports present=false.
func envObject(r envReader, key func(string) int, field func(k string, bit int) error) (bool, error) {
	present, entries, err := r.open()
	if !present || err != nil {
		return present, err
	}
	seen := 0
	for i := 0; ; i++ {
		k, ok, err := r.next(i, entries)
		if err != nil {
			return false, err
		}
		if !ok {
			return true, nil
		}
		bit := key(k)
		switch {
		case bit == 0:
			err = r.skip()
		case seen&bit != 0:
			return false, invalidf("key %q given twice", k)
		default:
			seen |= bit
			err = field(k, bit)
		}
		if err != nil && !errors.Is(err, ErrEnvelopeInvalid) {
			return false, invalidf("%s: %v", k, err)
		}
		if err != nil {
			return false, err
		}
	}
}

// envDecode reads an envelope into m (without validating it).
func envDecode(r envReader, m *UnifiedSynapseMessage) error {
	*m = UnifiedSynapseMessage{}
	present, err := envObject(r, envTopKey, func(_ string, bit int) error {
		switch bit {
		case envKeySender:
			return envDecodeAgent(r, &m.Sender)
		case envKeyReceiver:
			return envDecodeAgent(r, &m.Receiver)
		case envKeyTraceInfo:
			t := new(TraceInfo)
			ok, err := envDecodeTrace(r, t)
			if ok {
				m.TraceInfo = t
			}
			return err
		case envKeyPayload:
			p, err := r.payload()
			m.Payload = p
			return err
		}
		return r.str(m.envString(bit))
	})
	if err != nil {
		return err
	}
	if !present {
		return invalidf("not an object")
	}
	return nil
}

func envDecodeAgent(r envReader, a *AgentRef) error {
	_, err := envObject(r, envAgentKey, func(_ string, bit int) error {
		switch bit {
		case 1:
			return r.str(&a.AgentID)
		case 2:
			return r.str(&a.SystemID)
		}
		return r.str(&a.Endpoint)
	})
	return err
}

func envAgentKey(k string) int { return envKeyBit(k, envAgentKeys...) }

func envDecodeTrace(r envReader, t *TraceInfo) (bool, error) {
	return envObject(r, envTraceKey, func(_ string, bit int) error {
		switch bit {
		case 1:
			return r.str(&t.OriginalProtocol)
		case 2:
			return r.str(&t.OriginalMessageID)
		}
		h, err := r.hopCount()
		t.HopCount = h
		return err
	})
}

func envTraceKey(k string) int { return envKeyBit(k, envTraceKeys...) }

func envClampHop(h int64) int { return int(max(min(h, math.MaxInt32), math.MinInt32)) }

// envEntry is one key of an encoded object, in the order it is written.
type envEntry struct {
	key      string
	kind     uint8 // envStr, envInt, envObj or envRaw
	str      string
	num      int64
	children []envEntry
	raw      []byte
}

const (
	envStr = iota
	envInt
	envObj
	envRaw
)

// envEntries lists what both writers write: keys in SPEC §3 order, empty
// optional fields left out, payload already in the writer's codec.
func (m *UnifiedSynapseMessage) envEntries(payload RawPayload) []envEntry {
	// Each list has room for all its object's keys: one allocation.
	e := make([]envEntry, 0, len(envTopKeys))
	str := func(list *[]envEntry, k, v string, omitEmpty bool) {
		if !omitEmpty || v != "" {
			*list = append(*list, envEntry{key: k, kind: envStr, str: v})
		}
	}
	agent := func(k string, r AgentRef) {
		c := make([]envEntry, 1, len(envAgentKeys))
		c[0] = envEntry{key: "agent_id", kind: envStr, str: r.AgentID}
		str(&c, "system_id", r.SystemID, true)
		str(&c, "endpoint", r.Endpoint, true)
		e = append(e, envEntry{key: k, kind: envObj, children: c})
	}
	str(&e, "tp_version", m.TPVersion, false)
	str(&e, "message_id", m.MessageID, false)
	str(&e, "message_type", string(m.MessageType), false)
	agent("sender", m.Sender)
	if !m.Receiver.IsZero() {
		agent("receiver", m.Receiver)
	}
	str(&e, "timestamp", m.Timestamp, false)
	str(&e, "correlation_id", m.CorrelationID, true)
	str(&e, "conversation_id", m.ConversationID, true)
	str(&e, "protocol_contract_ref", m.ProtocolContractRef, true)
	str(&e, "content_type", m.ContentType, true)
	if payload.codec != PayloadNone {
		e = append(e, envEntry{key: "payload", kind: envRaw, raw: payload.raw})
	}
	if t := m.TraceInfo; t != nil {
		c := make([]envEntry, 0, len(envTraceKeys))
		str(&c, "original_protocol", t.OriginalProtocol, true)
		str(&c, "original_message_id", t.OriginalMessageID, true)
		c = append(c, envEntry{key: "hop_count", kind: envInt, num: int64(t.HopCount)})
		e = append(e, envEntry{key: "trace_info", kind: envObj, children: c})
	}
	str(&e, "signature", m.Signature, true)
	return e
}

// ---- JSON ----

// UnmarshalJSON decodes and validates a JSON envelope (rules above; no size
// limit: bound the input first or use DecodeEnvelopeJSONLimit).
func (m *UnifiedSynapseMessage) UnmarshalJSON(b []byte) error {
	if !utf8.Valid(b) {
		return invalidf("not UTF-8")
	}
	r := &envScan{b: b} // envelope_json.go
	if err := envDecode(r, m); err != nil {
		return err
	}
	if !r.end() {
		return invalidf("data after the envelope object")
	}
	return m.Validate()
}

// MarshalJSON writes the envelope as one compact JSON object (rules above).
// Send these bytes as they are: when the envelope is nested in a value that
// encoding/json marshals, encoding/json compacts and HTML-escapes them, which
// changes a payload's bytes (and so its signature) if the payload contains
// whitespace or <, >, &.
func (m UnifiedSynapseMessage) MarshalJSON() ([]byte, error) {
	payload, err := m.Payload.Convert(PayloadJSON)
	if err != nil {
		return nil, err
	}
	return envWriteJSON(make([]byte, 0, 512+len(payload.raw)), m.envEntries(payload)), nil
}

func envWriteJSON(b []byte, entries []envEntry) []byte {
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = envAppendJSONString(b, e.key)
		b = append(b, ':')
		switch e.kind {
		case envStr:
			b = envAppendJSONString(b, e.str)
		case envInt:
			b = strconv.AppendInt(b, e.num, 10)
		case envObj:
			b = envWriteJSON(b, e.children)
		case envRaw:
			b = append(b, e.raw...)
		}
	}
	return append(b, '}')
}

// envAppendJSONString appends s as a JSON string: quote, backslash and
// control characters escaped, invalid UTF-8 replaced by U+FFFD (as
// encoding/json does), everything else as UTF-8.
func envAppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// ---- msgpack ----

// DecodeMsgpack decodes and validates a msgpack envelope map (rules above;
// it does not run CheckMsgpack: DecodeEnvelopeMsgpack does).
func (m *UnifiedSynapseMessage) DecodeMsgpack(dec *msgpack.Decoder) error {
	if err := envDecode(envMsgpackReader{dec}, m); err != nil {
		return err
	}
	return m.Validate()
}

// EncodeMsgpack writes the envelope as one msgpack map (rules above).
func (m UnifiedSynapseMessage) EncodeMsgpack(enc *msgpack.Encoder) error {
	payload, err := m.Payload.Convert(PayloadMsgpack)
	if err != nil {
		return err
	}
	return envWriteMsgpack(enc, m.envEntries(payload))
}

type envMsgpackReader struct{ dec *msgpack.Decoder }

func (r envMsgpackReader) open() (bool, int, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return false, 0, invalidf("%v", err)
	}
	if c == msgpcode.Nil {
		return false, 0, r.dec.Skip()
	}
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return false, 0, invalidf("want a map, found code 0x%02x", c)
	}
	// Each entry reads at least two bytes, so n is bounded by the input.
	n, err := r.dec.DecodeMapLen()
	if err != nil {
		return false, 0, invalidf("%v", err)
	}
	return true, n, nil
}

func (r envMsgpackReader) next(i, entries int) (string, bool, error) {
	if i >= entries {
		return "", false, nil
	}
	var key string
	if err := r.str(&key); err != nil {
		return "", false, invalidf("key %d: %v", i, err)
	}
	return key, true, nil
}

func (r envMsgpackReader) str(p *string) error {
	c, err := r.dec.PeekCode()
	if err != nil {
		return err
	}
	if c != msgpcode.Nil && !msgpcode.IsFixedString(c) && c != msgpcode.Str8 && c != msgpcode.Str16 && c != msgpcode.Str32 {
		return fmt.Errorf("want a string, found code 0x%02x", c)
	}
	*p, err = r.dec.DecodeString()
	return err
}

func (r envMsgpackReader) hopCount() (int, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return 0, err
	}
	if c != msgpcode.Nil && !msgpcode.IsFixedNum(c) && (c < msgpcode.Uint8 || c > msgpcode.Int64) {
		return 0, fmt.Errorf("want an integer, found code 0x%02x", c)
	}
	if c == msgpcode.Uint64 { // above MaxInt64 it would wrap negative
		u, err := r.dec.DecodeUint64()
		return int(min(u, math.MaxInt32)), err
	}
	h, err := r.dec.DecodeInt64()
	return envClampHop(h), err
}

func (r envMsgpackReader) payload() (RawPayload, error) {
	raw, err := r.dec.DecodeRaw()
	if err != nil {
		return RawPayload{}, err
	}
	return RawPayload{codec: PayloadMsgpack, raw: raw}, nil
}

func (r envMsgpackReader) skip() error { return r.dec.Skip() }

func envWriteMsgpack(enc *msgpack.Encoder, entries []envEntry) error {
	if err := enc.EncodeMapLen(len(entries)); err != nil {
		return err
	}
	for _, e := range entries {
		if err := enc.EncodeString(e.key); err != nil {
			return err
		}
		var err error
		switch e.kind {
		case envStr:
			err = enc.EncodeString(e.str)
		case envInt:
			err = enc.EncodeInt(e.num)
		case envObj:
			err = envWriteMsgpack(enc, e.children)
		case envRaw:
			_, err = enc.Writer().Write(e.raw)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
