package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/vmihailenco/msgpack/v5"
)

// Errors of decoding and validating an envelope. A refused envelope's error
// wraps exactly one of ErrEnvelopeInvalid, ErrVersionUnsupported or
// ErrHopLimit (an oversized one wraps ErrEnvelopeTooLarge as well as
// ErrEnvelopeInvalid), followed by the reason.
var (
	// ErrEnvelopeInvalid: not an envelope, a required field missing or
	// malformed (registry code message_format_invalid).
	ErrEnvelopeInvalid = errors.New("invalid envelope")
	// ErrEnvelopeTooLarge: the encoded envelope is over the caller's limit.
	ErrEnvelopeTooLarge = errors.New("envelope too large")
	// ErrVersionUnsupported: tp_version has a MAJOR other than ProtocolMajor
	// (TP-VER001).
	ErrVersionUnsupported = errors.New("unsupported protocol major version")
	// ErrHopLimit: trace_info.hop_count is over MaxHops (TP-TRA001).
	ErrHopLimit = errors.New("hop limit exceeded")
	// ErrNoPayload: RawPayload.Decode on a message without payload.
	ErrNoPayload = errors.New("message has no payload")
)

// Protocol constants of SPEC §3. NewMessage writes ProtocolVersion
// (capabilities.go) as tp_version.
const (
	// ProtocolMajor is the only tp_version MAJOR this agent accepts.
	ProtocolMajor = 1
	// MaxHops is the highest trace_info.hop_count accepted.
	MaxHops = 5
	// TimestampLayout is the form of the timestamps this agent writes: RFC
	// 3339, UTC, exactly three fractional digits. Any RFC 3339 time is
	// accepted on input and kept as received (it is signed as a string).
	TimestampLayout = "2006-01-02T15:04:05.000Z"
	// MaxEnvelopeBytes is the size limit of DecodeEnvelopeJSON and
	// DecodeEnvelopeMsgpack; the ...Limit variants take their own.
	MaxEnvelopeBytes = 4 << 20
)

// MessageType is the message_type field of an envelope.
type MessageType string

// Message types (the message_type field). The 17 p2p:* types are those of
// seed 004 §2.1; negotiation is seed 002 §8; error answers carry the TPError
// object of SPEC §4 as payload; group:* types carry SPEC §10 between agents.
// Receivers answer unknown types themselves: decoding does not refuse them.
const (
	MsgTaskRequest        MessageType = "p2p:task_request"
	MsgTaskConfirm        MessageType = "p2p:task_confirm"
	MsgTaskReject         MessageType = "p2p:task_reject"
	MsgTaskNeedInfo       MessageType = "p2p:task_need_info"
	MsgTaskInfoProvided   MessageType = "p2p:task_info_provided"
	MsgTaskStatusUpdate   MessageType = "p2p:task_status_update"
	MsgTaskComplete       MessageType = "p2p:task_complete"
	MsgTaskFailed         MessageType = "p2p:task_failed"
	MsgTaskCancel         MessageType = "p2p:task_cancel"
	MsgTaskAck            MessageType = "p2p:task_ack"
	MsgAck                MessageType = "p2p:ack"
	MsgNack               MessageType = "p2p:nack"
	MsgHeartbeat          MessageType = "p2p:heartbeat"
	MsgCapabilityQuery    MessageType = "p2p:capability_query"
	MsgCapabilityResponse MessageType = "p2p:capability_response"
	MsgTaskNeedHuman      MessageType = "p2p:task_need_human"
	MsgHumanDecision      MessageType = "p2p:human_decision"

	MsgNegotiateRequest  MessageType = "negotiate_request"
	MsgNegotiateResponse MessageType = "negotiate_response"
	MsgError             MessageType = "error"

	MsgGroupInvite     MessageType = "group:invite"
	MsgGroupJoin       MessageType = "group:join"
	MsgGroupLeave      MessageType = "group:leave"
	MsgGroupDisband    MessageType = "group:disband"
	MsgGroupMessage    MessageType = "group:message"
	MsgGroupBallot     MessageType = "group:ballot"
	MsgGroupVoteOpen   MessageType = "group:vote_open"
	MsgGroupVoteResult MessageType = "group:vote_result"
	MsgGroupTask       MessageType = "group:task"
	MsgGroupTaskResult MessageType = "group:task_result"

	// MsgPairRequest asks the receiver to pair with the sender; its
	// payload is the sender's Identity (with its public key, which verifies
	// the envelope). The receiver lists it for an operator to accept.
	MsgPairRequest MessageType = "peer:pair_request"
)

// MessageTypes returns every message type this package names, p2p first.
func MessageTypes() []MessageType {
	return []MessageType{
		MsgTaskRequest, MsgTaskConfirm, MsgTaskReject, MsgTaskNeedInfo,
		MsgTaskInfoProvided, MsgTaskStatusUpdate, MsgTaskComplete, MsgTaskFailed,
		MsgTaskCancel, MsgTaskAck, MsgAck, MsgNack, MsgHeartbeat,
		MsgCapabilityQuery, MsgCapabilityResponse, MsgTaskNeedHuman, MsgHumanDecision,
		MsgNegotiateRequest, MsgNegotiateResponse, MsgError,
		MsgGroupInvite, MsgGroupJoin, MsgGroupLeave, MsgGroupDisband, MsgGroupMessage,
		MsgGroupBallot, MsgGroupVoteOpen, MsgGroupVoteResult, MsgGroupTask, MsgGroupTaskResult,
		MsgPairRequest, MsgSynapseMessage,
	}
}

// IsKnownMessageType reports whether t is one of MessageTypes.
func IsKnownMessageType(t MessageType) bool {
	for _, k := range MessageTypes() {
		if k == t {
			return true
		}
	}
	return false
}

// AgentRef names an agent in an envelope's sender or receiver.
type AgentRef struct {
	AgentID  string `json:"agent_id" msgpack:"agent_id"`
	SystemID string `json:"system_id,omitempty" msgpack:"system_id,omitempty"`
	Endpoint string `json:"endpoint,omitempty" msgpack:"endpoint,omitempty"`
}

// IsZero reports whether every field of r is empty.
func (r AgentRef) IsZero() bool { return r == AgentRef{} }

// TraceInfo records where a relayed message came from and how many hops it
// has made.
type TraceInfo struct {
	OriginalProtocol  string `json:"original_protocol,omitempty" msgpack:"original_protocol,omitempty"`
	OriginalMessageID string `json:"original_message_id,omitempty" msgpack:"original_message_id,omitempty"`
	HopCount          int    `json:"hop_count" msgpack:"hop_count"`
}

// UnifiedSynapseMessage is the protocol envelope of SPEC §3. Its encodings
// are written by hand (envelope_codec.go) so that the payload keeps the exact
// bytes it was received with: the tags below name the keys and say which are
// optional, they do not drive the codecs.
//
// Timestamp is kept as the string that was received because it is signed as
// a string; Time parses it. An absent content_type means a JSON payload
// (ContentJSON). A zero Receiver, a nil TraceInfo and a zero Payload are
// left out when encoding.
type UnifiedSynapseMessage struct {
	TPVersion           string      `json:"tp_version" msgpack:"tp_version"`
	MessageID           string      `json:"message_id" msgpack:"message_id"`
	MessageType         MessageType `json:"message_type" msgpack:"message_type"`
	Sender              AgentRef    `json:"sender" msgpack:"sender"`
	Receiver            AgentRef    `json:"receiver,omitzero" msgpack:"receiver,omitempty"`
	Timestamp           string      `json:"timestamp" msgpack:"timestamp"`
	CorrelationID       string      `json:"correlation_id,omitempty" msgpack:"correlation_id,omitempty"`
	ConversationID      string      `json:"conversation_id,omitempty" msgpack:"conversation_id,omitempty"`
	ProtocolContractRef string      `json:"protocol_contract_ref,omitempty" msgpack:"protocol_contract_ref,omitempty"`
	ContentType         string      `json:"content_type,omitempty" msgpack:"content_type,omitempty"`
	Payload             RawPayload  `json:"payload,omitzero" msgpack:"payload,omitempty"`
	TraceInfo           *TraceInfo  `json:"trace_info,omitempty" msgpack:"trace_info,omitempty"`
	Signature           string      `json:"signature,omitempty" msgpack:"signature,omitempty"`
}

// NewMessage makes an unsigned envelope from one agent to another, with
// tp_version ProtocolVersion, a fresh UUID v7 message_id and now as the
// timestamp (UTC, milliseconds).
func NewMessage(msgType MessageType, from AgentRef, to AgentRef, payload RawPayload, now time.Time) *UnifiedSynapseMessage {
	// NewV7 fails only when the system random source does, which the Go
	// runtime treats as fatal anyway (crypto/rand.Read never returns an error).
	id := uuid.Must(uuid.NewV7())
	return &UnifiedSynapseMessage{
		TPVersion:   ProtocolVersion,
		MessageID:   id.String(),
		MessageType: msgType,
		Sender:      from,
		Receiver:    to,
		Timestamp:   FormatTimestamp(now),
		Payload:     payload,
	}
}

// FormatTimestamp writes t in TimestampLayout.
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// Time parses the timestamp field (any RFC 3339 date-time).
func (m *UnifiedSynapseMessage) Time() (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	if err != nil || !isRFC3339(m.Timestamp) {
		return time.Time{}, fmt.Errorf("%w: timestamp %q is not RFC 3339", ErrEnvelopeInvalid, m.Timestamp)
	}
	return t, nil
}

// Validate checks what every decoder checks: a supported tp_version, a UUID
// message_id, a message_type, sender.agent_id, an RFC 3339 timestamp, a
// hop_count within MaxHops, and that every string field is valid UTF-8
// without control characters (so that no field can contain the line breaks
// that separate the fields of SigningInput).
func (m *UnifiedSynapseMessage) Validate() error {
	if m.TPVersion == "" {
		return invalidf("tp_version is missing")
	}
	major, err := semverMajor(m.TPVersion)
	if err != nil {
		return invalidf("tp_version %q is not a semantic version", m.TPVersion)
	}
	if major != ProtocolMajor {
		return fmt.Errorf("%w: tp_version %q, this agent speaks %d.x", ErrVersionUnsupported, m.TPVersion, ProtocolMajor)
	}
	var fields [17]textField // on the stack: every field fits
	for _, f := range m.appendTextFields(fields[:0]) {
		if !utf8.ValidString(f.value) {
			return invalidf("%s is not valid UTF-8", f.name)
		}
		if i := strings.IndexFunc(f.value, isControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(f.value[i:])
			return invalidf("%s contains control character %U", f.name, r)
		}
	}
	switch {
	case m.MessageID == "":
		return invalidf("message_id is missing")
	case !isCanonicalUUID(m.MessageID):
		return invalidf("message_id %q is not a UUID", m.MessageID)
	case m.MessageType == "":
		return invalidf("message_type is missing")
	case m.Sender.AgentID == "":
		return invalidf("sender.agent_id is missing")
	case m.Timestamp == "":
		return invalidf("timestamp is missing")
	}
	if _, err := m.Time(); err != nil {
		return err
	}
	if m.TraceInfo != nil {
		switch h := m.TraceInfo.HopCount; {
		case h < 0:
			return invalidf("trace_info.hop_count %d is negative", h)
		case h > MaxHops:
			return fmt.Errorf("%w: hop_count %d > %d", ErrHopLimit, h, MaxHops)
		}
	}
	return nil
}

type textField struct {
	name, value string
}

// appendTextFields appends every string of the envelope except the
// payload to f.
func (m *UnifiedSynapseMessage) appendTextFields(f []textField) []textField {
	f = append(f, []textField{
		{"tp_version", m.TPVersion},
		{"message_id", m.MessageID},
		{"message_type", string(m.MessageType)},
		{"sender.agent_id", m.Sender.AgentID},
		{"sender.system_id", m.Sender.SystemID},
		{"sender.endpoint", m.Sender.Endpoint},
		{"receiver.agent_id", m.Receiver.AgentID},
		{"receiver.system_id", m.Receiver.SystemID},
		{"receiver.endpoint", m.Receiver.Endpoint},
		{"timestamp", m.Timestamp},
		{"correlation_id", m.CorrelationID},
		{"conversation_id", m.ConversationID},
		{"protocol_contract_ref", m.ProtocolContractRef},
		{"content_type", m.ContentType},
		{"signature", m.Signature},
	}...)
	if m.TraceInfo != nil {
		f = append(f,
			textField{"trace_info.original_protocol", m.TraceInfo.OriginalProtocol},
			textField{"trace_info.original_message_id", m.TraceInfo.OriginalMessageID})
	}
	return f
}

// isRFC3339 checks the shape that time.Parse is lenient about:
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), every part full width.
func isRFC3339(s string) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(shape)+1 {
		return false
	}
	for i := 0; i < len(shape); i++ {
		if c := s[i]; shape[i] == 'd' && (c < '0' || c > '9') || shape[i] != 'd' && c != shape[i] {
			return false
		}
	}
	rest := s[len(shape):]
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && '0' <= rest[i] && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	if rest == "Z" {
		return true
	}
	return len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
		strings.Trim(rest[1:3]+rest[4:], "0123456789") == ""
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrEnvelopeInvalid, fmt.Sprintf(format, args...))
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// isCanonicalUUID accepts the 36-character 8-4-4-4-12 form of any RFC 9562
// UUID. NewMessage writes version 7; ids of other generators are accepted.
func isCanonicalUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// semverMajor returns the MAJOR of a semantic version MAJOR.MINOR.PATCH with
// an optional -pre-release and +build suffix.
func semverMajor(v string) (int, error) {
	core := v
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		core, v = v[:i], v[i+1:]
		if v == "" || strings.IndexFunc(v, func(r rune) bool {
			return !(r == '.' || r == '-' || r == '+' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
		}) >= 0 {
			return 0, errors.New("bad suffix")
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return 0, errors.New("want MAJOR.MINOR.PATCH")
	}
	nums := [3]int{}
	for i, p := range parts {
		if p == "" || len(p) > 9 || (len(p) > 1 && p[0] == '0') || strings.Trim(p, "0123456789") != "" {
			return 0, errors.New("bad number")
		}
		nums[i], _ = strconv.Atoi(p)
	}
	return nums[0], nil
}

// PayloadCodec says which encoding the bytes of a RawPayload are in.
type PayloadCodec uint8

// The payload codecs.
const (
	PayloadNone    PayloadCodec = iota // no payload
	PayloadJSON                        // raw JSON text
	PayloadMsgpack                     // raw msgpack bytes
)

// String returns "none", "json" or "msgpack".
func (c PayloadCodec) String() string {
	switch c {
	case PayloadNone:
		return "none"
	case PayloadJSON:
		return "json"
	case PayloadMsgpack:
		return "msgpack"
	}
	return "PayloadCodec(" + strconv.Itoa(int(c)) + ")"
}

// RawPayload is an envelope's payload kept as the exact bytes it was
// received or built with, and the codec they are in: raw JSON text from a
// JSON envelope, raw msgpack bytes from a msgpack envelope. Signatures hash
// these bytes (SigningInput), so a receiver verifies what it received and
// never re-encodes. The zero value is "no payload".
//
// An envelope is written in the codec of its payload's bytes unchanged; in
// the other codec the payload is converted (Convert), which changes its
// bytes and so its signature input: sign a message after choosing the codec
// it travels in.
type RawPayload struct {
	codec PayloadCodec
	raw   []byte
}

// NewJSONPayload encodes v as JSON (no HTML escaping) into a payload.
func NewJSONPayload(v any) (RawPayload, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return RawPayload{}, fmt.Errorf("encode JSON payload: %w", err)
	}
	return RawPayload{codec: PayloadJSON, raw: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}, nil
}

// NewMsgpackPayload encodes v as msgpack into a payload: struct fields are
// named by their msgpack tags, else by their json tags; integers take their
// smallest encoding; map keys are sorted so equal values give equal bytes.
func NewMsgpackPayload(v any) (RawPayload, error) {
	b, err := payloadMsgpackMarshal(v)
	if err != nil {
		return RawPayload{}, fmt.Errorf("encode msgpack payload: %w", err)
	}
	return RawPayload{codec: PayloadMsgpack, raw: b}, nil
}

// RawJSONPayload makes a payload of one JSON value's text, kept byte for
// byte (surrounding whitespace is trimmed). b is copied.
func RawJSONPayload(b []byte) (RawPayload, error) {
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return RawPayload{}, errors.New("payload is not one JSON value")
	}
	if !utf8.Valid(b) {
		return RawPayload{}, errors.New("payload is not UTF-8")
	}
	return RawPayload{codec: PayloadJSON, raw: bytes.Clone(b)}, nil
}

// RawMsgpackPayload makes a payload of exactly one msgpack value's bytes,
// checked with CheckMsgpack (so map keys are strings, as in every Synapse
// document). b is copied.
func RawMsgpackPayload(b []byte) (RawPayload, error) {
	if err := CheckMsgpack(b, DefaultMsgpackLimits); err != nil {
		return RawPayload{}, fmt.Errorf("payload: %w", err)
	}
	return RawPayload{codec: PayloadMsgpack, raw: bytes.Clone(b)}, nil
}

// Codec tells which encoding Bytes is in.
func (p RawPayload) Codec() PayloadCodec { return p.codec }

// Bytes returns the encoded payload; nil when there is none. The slice is
// shared: do not modify it.
func (p RawPayload) Bytes() []byte { return p.raw }

// IsZero reports whether there is no payload.
func (p RawPayload) IsZero() bool { return p.codec == PayloadNone }

// Equal reports whether p and q have the same codec and the same bytes.
func (p RawPayload) Equal(q RawPayload) bool {
	return p.codec == q.codec && bytes.Equal(p.raw, q.raw)
}

// Decode decodes the payload into v from whichever codec it is in. msgpack
// is decoded with struct fields named by msgpack tags, else json tags.
func (p RawPayload) Decode(v any) error {
	switch p.codec {
	case PayloadJSON:
		if err := json.Unmarshal(p.raw, v); err != nil {
			return fmt.Errorf("decode JSON payload: %w", err)
		}
	case PayloadMsgpack:
		dec := msgpack.NewDecoder(bytes.NewReader(p.raw))
		dec.SetCustomStructTag("json")
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("decode msgpack payload: %w", err)
		}
	default:
		return ErrNoPayload
	}
	return nil
}

// Convert returns the payload in codec c: p itself when it is already in c
// (or has no payload), else the same value re-encoded. JSON numbers become
// msgpack integers when they are integers, floats otherwise; msgpack binary
// becomes a base64 JSON string and non-string map keys are formatted as
// strings (the rules of JSONValue).
func (p RawPayload) Convert(c PayloadCodec) (RawPayload, error) {
	if p.codec == c || p.codec == PayloadNone {
		return p, nil
	}
	switch c {
	case PayloadMsgpack:
		b, err := payloadMsgpackMarshal(JSONValue(p.raw))
		if err != nil {
			return RawPayload{}, fmt.Errorf("convert payload to msgpack: %w", err)
		}
		return RawPayload{codec: PayloadMsgpack, raw: b}, nil
	case PayloadJSON:
		var v JSONValue
		if err := msgpack.Unmarshal(p.raw, &v); err != nil {
			return RawPayload{}, fmt.Errorf("convert payload to JSON: %w", err)
		}
		if len(v) == 0 {
			v = JSONValue("null")
		}
		return RawPayload{codec: PayloadJSON, raw: v}, nil
	}
	return RawPayload{}, fmt.Errorf("convert payload: unknown codec %v", c)
}

// MarshalJSON writes the payload as JSON (null when there is none). Note
// that encoding/json compacts what it is given; the envelope codec does not.
func (p RawPayload) MarshalJSON() ([]byte, error) {
	if p.codec == PayloadNone {
		return []byte("null"), nil
	}
	q, err := p.Convert(PayloadJSON)
	if err != nil {
		return nil, err
	}
	return q.raw, nil
}

// UnmarshalJSON keeps a copy of the JSON text.
func (p *RawPayload) UnmarshalJSON(b []byte) error {
	*p = RawPayload{codec: PayloadJSON, raw: bytes.Clone(b)}
	return nil
}

// EncodeMsgpack writes the payload as msgpack (nil when there is none).
func (p RawPayload) EncodeMsgpack(enc *msgpack.Encoder) error {
	if p.codec == PayloadNone {
		return enc.EncodeNil()
	}
	q, err := p.Convert(PayloadMsgpack)
	if err != nil {
		return err
	}
	_, err = enc.Writer().Write(q.raw)
	return err
}

// DecodeMsgpack keeps the raw bytes of the next msgpack value.
func (p *RawPayload) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, err := dec.DecodeRaw()
	if err != nil {
		return err
	}
	*p = RawPayload{codec: PayloadMsgpack, raw: raw}
	return nil
}

func payloadMsgpackMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	enc.SetSortMapKeys(true)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
