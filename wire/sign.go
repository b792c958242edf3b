package wire

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Envelope signatures (SPEC §3, contract).
//
// The signature is Ed25519 over SigningInput, written base64 (standard
// alphabet, padded) in the signature field. The input is ten lines joined by
// "\n" with no trailing line break:
//
//	synapse-sig-v1
//	<tp_version>
//	<message_id>
//	<message_type>
//	<sender.agent_id>
//	<receiver.agent_id>
//	<timestamp>
//	<correlation_id>
//	<protocol_contract_ref>
//	<lowercase hex SHA-256 of the payload's encoded bytes>
//
// Absent fields are empty lines. The payload bytes are those of the payload
// value exactly as in the envelope (JSON text or msgpack bytes); an absent
// payload hashes the empty input (e3b0c442…b855). Fields are the strings as
// received, never re-formatted. No field may contain a line break: decoders
// refuse control characters, Sign refuses them and Verify fails on them, so
// a signature can never be moved to another split of the same lines.

// Errors of signatures and replay checks.
var (
	// ErrBadSignature: no signature, a malformed one, or one that does not
	// verify with the sender's key (TP-ID003).
	ErrBadSignature = errors.New("bad signature")
	// ErrStaleTimestamp: the timestamp is outside the replay window
	// (TP-ID005).
	ErrStaleTimestamp = errors.New("timestamp outside the replay window")
)

// SignatureScheme is the first line of SigningInput.
const SignatureScheme = "synapse-sig-v1"

// ReplayWindow is how far a timestamp may be from the receiver's clock.
const ReplayWindow = 300 * time.Second

// SigningInput returns the bytes that Sign signs and Verify checks.
func SigningInput(m *UnifiedSynapseMessage) []byte {
	digest := PayloadDigest(m.Payload)
	fields := [...]string{
		SignatureScheme, m.TPVersion, m.MessageID, string(m.MessageType),
		m.Sender.AgentID, m.Receiver.AgentID, m.Timestamp, m.CorrelationID,
		m.ProtocolContractRef,
	}
	n := len(digest)
	for _, f := range fields {
		n += len(f) + 1
	}
	b := make([]byte, 0, n)
	for _, f := range fields {
		b = append(b, f...)
		b = append(b, '\n')
	}
	return append(b, digest...)
}

// PayloadDigest is the lowercase hex SHA-256 of the payload's encoded bytes
// (of the empty input when there is no payload).
func PayloadDigest(p RawPayload) string {
	sum := sha256.Sum256(p.raw)
	return hex.EncodeToString(sum[:])
}

// Sign sets m.Signature to the Ed25519 signature of SigningInput(m). Sign
// the message in the codec it will travel in (see RawPayload).
func Sign(m *UnifiedSynapseMessage, priv ed25519.PrivateKey) error {
	if len(priv) != ed25519.PrivateKeySize {
		return fmt.Errorf("sign: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if name := sigLineBreak(m); name != "" {
		return fmt.Errorf("sign: %w: %s contains a line break", ErrEnvelopeInvalid, name)
	}
	m.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, SigningInput(m)))
	return nil
}

// Verify checks m.Signature against SigningInput(m) with the sender's
// public key. Every failure wraps ErrBadSignature.
func Verify(m *UnifiedSynapseMessage, pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key has %d bytes, want %d", ErrBadSignature, len(pub), ed25519.PublicKeySize)
	}
	if m.Signature == "" {
		return fmt.Errorf("%w: message is not signed", ErrBadSignature)
	}
	if len(m.Signature) != base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
		return fmt.Errorf("%w: signature has %d characters, want %d", ErrBadSignature,
			len(m.Signature), base64.StdEncoding.EncodedLen(ed25519.SignatureSize))
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(m.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: signature is not base64 of %d bytes", ErrBadSignature, ed25519.SignatureSize)
	}
	if name := sigLineBreak(m); name != "" {
		return fmt.Errorf("%w: %s contains a line break", ErrBadSignature, name)
	}
	if !ed25519.Verify(pub, SigningInput(m), sig) {
		return fmt.Errorf("%w: does not verify with the sender's key", ErrBadSignature)
	}
	return nil
}

// sigLineBreak names the first signed field that contains a line break.
func sigLineBreak(m *UnifiedSynapseMessage) string {
	for _, f := range [...]textField{
		{"tp_version", m.TPVersion}, {"message_id", m.MessageID},
		{"message_type", string(m.MessageType)}, {"sender.agent_id", m.Sender.AgentID},
		{"receiver.agent_id", m.Receiver.AgentID}, {"timestamp", m.Timestamp},
		{"correlation_id", m.CorrelationID}, {"protocol_contract_ref", m.ProtocolContractRef},
	} {
		if strings.ContainsAny(f.value, "\n\r") {
			return f.name
		}
	}
	return ""
}

// CheckTimestamp refuses a message whose timestamp is more than window away
// from now, in either direction (ErrStaleTimestamp); window <= 0 means
// ReplayWindow. A timestamp exactly window away is accepted. An unparsable
// timestamp wraps ErrEnvelopeInvalid.
func CheckTimestamp(m *UnifiedSynapseMessage, now time.Time, window time.Duration) error {
	if window <= 0 {
		window = ReplayWindow
	}
	ts, err := m.Time()
	if err != nil {
		return err
	}
	d := now.Sub(ts) // saturates instead of overflowing
	if d > window || d < -window {
		return fmt.Errorf("%w: timestamp %s is %v from local time, window ±%v",
			ErrStaleTimestamp, m.Timestamp, d.Round(time.Millisecond), window)
	}
	return nil
}
