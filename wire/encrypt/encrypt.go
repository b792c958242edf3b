// Package encrypt is the payload encryption of protocol contracts (SPEC
// §7, TP §7.2): an agent's X25519 keys derived from its Ed25519 identity,
// sealing a plaintext for a peer and opening it, and the content types
// that mark an envelope's payload, or some of its fields, as sealed. It
// builds on package wire's envelope types; wire does not import it.
package encrypt

import (
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"mime"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/synapse-edge/synapse/wire"
)

// Payload encryption (SPEC §7, TP §7.2): the security levels standard
// (private fields) and high (the whole payload) of a protocol contract.
//
// Keys. An agent's X25519 key pair is derived from its Ed25519 identity
// key by the standard conversion (RFC 7748 §4.1 birational map, as
// libsodium's crypto_sign_ed25519_*_to_curve25519): the private scalar is
// the first 32 bytes of SHA-512(seed) (clamped by X25519 itself), the public
// u-coordinate is (1+y)/(1-y) mod 2^255-19 of the Edwards y of the public
// key. A peer's encryption key therefore follows from the key already
// pinned at pairing; nothing else is published or stored.
//
// Sealing one plaintext for a recipient, with a fresh ephemeral key each
// time:
//
//	eph         = random X25519 key pair
//	shared      = X25519(eph.private, recipient.public)   (all-zero refused)
//	key         = HKDF-SHA256(secret=shared, salt=eph.public || recipient.public,
//	                          info="synapse-enc-v1", 32 bytes)
//	nonce       = 12 random bytes
//	ciphertext  = ChaCha20-Poly1305(key, nonce, plaintext, aad)   (tag appended)
//
// The result is an EncryptedPayload object, every byte string in base64
// (standard alphabet, padded):
//
//	{"alg":"X25519-HKDF-SHA256-ChaCha20-Poly1305","epk":"<32 bytes>",
//	 "nonce":"<12 bytes>","ciphertext":"<len(plaintext)+16 bytes>",
//	 "cty":"application/json"}
//
// cty is the MIME type of the plaintext (absent: application/json). The
// additional data binds the ciphertext to its envelope (EncryptionAAD), so
// it cannot be moved into another message or another field.
//
// In an envelope: with high, payload is the EncryptedPayload and
// content_type is ContentEncrypted; with standard, each private field's
// value is an EncryptedPayload and content_type is
// `application/json; private="<field> <field>..."` (PrivateParam), naming
// the replaced fields. The signature covers the bytes as sent, ciphertext
// included.

// Errors of payload encryption.
var (
	// ErrDecrypt: an encrypted payload that is malformed or does not open
	// with the receiver's key (TP-SEC003).
	ErrDecrypt = errors.New("payload decryption failed")
	// ErrBadKey: a key that cannot be converted or used.
	ErrBadKey = errors.New("bad encryption key")
)

// Encryption constants.
const (
	// EncryptionAlg names the scheme in EncryptedPayload.alg.
	EncryptionAlg = "X25519-HKDF-SHA256-ChaCha20-Poly1305"
	// ContentEncrypted is the content_type of an envelope whose whole
	// payload is an EncryptedPayload.
	ContentEncrypted = "application/vnd.synapse.encrypted+json"
	// PrivateParam is the content_type parameter listing the fields
	// encrypted one by one (space separated).
	PrivateParam = "private"
	// encInfo is the HKDF info and the first line of the additional data.
	encInfo = "synapse-enc-v1"
	// MaxSealed bounds a plaintext (the envelope bound).
	MaxSealed = wire.MaxEnvelopeBytes
)

// EncryptedPayload is one sealed plaintext (see above).
type EncryptedPayload struct {
	Alg         string `json:"alg" msgpack:"alg"`
	EPK         string `json:"epk" msgpack:"epk"`
	Nonce       string `json:"nonce" msgpack:"nonce"`
	Ciphertext  string `json:"ciphertext" msgpack:"ciphertext"`
	ContentType string `json:"cty,omitempty" msgpack:"cty,omitempty"`
}

// p25519 is the field prime 2^255 - 19.
var p25519 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))

// X25519PrivateKey derives the X25519 private key of an Ed25519 key.
func X25519PrivateKey(priv ed25519.PrivateKey) (*ecdh.PrivateKey, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: Ed25519 private key has %d bytes", ErrBadKey, len(priv))
	}
	h := sha512.Sum512(priv.Seed())
	k, err := ecdh.X25519().NewPrivateKey(h[:32])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return k, nil
}

// X25519PublicKey converts an Ed25519 public key to the X25519 public key
// of the same key pair. A key whose y is not canonical (≥ p) or is 1 (the
// neutral point, u would be infinite) is refused.
func X25519PublicKey(pub ed25519.PublicKey) (*ecdh.PublicKey, error) {
	if len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: Ed25519 public key has %d bytes", ErrBadKey, len(pub))
	}
	le := make([]byte, 32)
	for i := range 32 {
		le[31-i] = pub[i]
	}
	le[0] &= 0x7f // the sign bit of x
	y := new(big.Int).SetBytes(le)
	if y.Cmp(p25519) >= 0 {
		return nil, fmt.Errorf("%w: Ed25519 public key is not canonical", ErrBadKey)
	}
	one := big.NewInt(1)
	den := new(big.Int).Sub(one, y)
	den.Mod(den, p25519)
	if den.Sign() == 0 {
		return nil, fmt.Errorf("%w: Ed25519 public key is the neutral point", ErrBadKey)
	}
	u := new(big.Int).Add(one, y)
	u.Mul(u, den.ModInverse(den, p25519))
	u.Mod(u, p25519)
	be := u.FillBytes(make([]byte, 32))
	out := make([]byte, 32)
	for i := range 32 {
		out[i] = be[31-i]
	}
	k, err := ecdh.X25519().NewPublicKey(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return k, nil
}

// EncryptionAAD is the additional data that binds a sealed value to its
// envelope: the UTF-8 lines
//
//	synapse-enc-v1
//	<message_id>
//	<message_type>
//	<sender.agent_id>
//	<receiver.agent_id>
//	<field>
//
// joined by "\n"; field is "" for a whole payload, else the name of the
// private field.
func EncryptionAAD(m *wire.UnifiedSynapseMessage, field string) []byte {
	return []byte(strings.Join([]string{encInfo, m.MessageID, string(m.MessageType), m.Sender.AgentID, m.Receiver.AgentID, field}, "\n"))
}

// SealPayload encrypts plaintext for recipient with a fresh ephemeral key
// and nonce. contentType is the plaintext's MIME type ("" is JSON).
func SealPayload(recipient *ecdh.PublicKey, plaintext []byte, contentType string, aad []byte) (*EncryptedPayload, error) {
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("seal: ephemeral key: %w", err)
	}
	nonce := make([]byte, chacha20poly1305.NonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	return SealPayloadWith(eph, nonce, recipient, plaintext, contentType, aad)
}

// SealPayloadWith is SealPayload with a given ephemeral key and nonce:
// for known-answer tests only. Reusing either breaks the encryption.
func SealPayloadWith(eph *ecdh.PrivateKey, nonce []byte, recipient *ecdh.PublicKey, plaintext []byte, contentType string, aad []byte) (*EncryptedPayload, error) {
	if len(plaintext) > MaxSealed {
		return nil, fmt.Errorf("seal: plaintext of %d bytes is over %d", len(plaintext), MaxSealed)
	}
	if len(nonce) != chacha20poly1305.NonceSize {
		return nil, fmt.Errorf("seal: nonce has %d bytes, want %d", len(nonce), chacha20poly1305.NonceSize)
	}
	if recipient == nil || recipient.Curve() != ecdh.X25519() || eph == nil || eph.Curve() != ecdh.X25519() {
		return nil, fmt.Errorf("seal: %w: want X25519 keys", ErrBadKey)
	}
	epk := eph.PublicKey().Bytes()
	aead, err := sessionCipher(eph, recipient, epk, recipient.Bytes())
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	ct := aead.Seal(nil, nonce, plaintext, aad)
	ep := &EncryptedPayload{
		Alg:        EncryptionAlg,
		EPK:        base64.StdEncoding.EncodeToString(epk),
		Nonce:      base64.StdEncoding.EncodeToString(nonce),
		Ciphertext: base64.StdEncoding.EncodeToString(ct),
	}
	if contentType != "" && contentType != wire.ContentJSON {
		ep.ContentType = contentType
	}
	return ep, nil
}

// sessionCipher derives the per-message key: X25519 of priv and pub, then
// HKDF-SHA256 with salt epk || recipient public key.
func sessionCipher(priv *ecdh.PrivateKey, pub *ecdh.PublicKey, epk, rpk []byte) (cipher.AEAD, error) {
	shared, err := priv.ECDH(pub)
	if err != nil { // a low-order point gives the all-zero secret
		return nil, fmt.Errorf("%w: key agreement: %v", ErrBadKey, err)
	}
	salt := append(append(make([]byte, 0, 64), epk...), rpk...)
	key, err := hkdf.Key(sha256.New, shared, salt, encInfo, chacha20poly1305.KeySize)
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	return chacha20poly1305.New(key)
}

// Check validates the shape of e without opening it: the algorithm, the
// base64 fields and their sizes. Failures wrap ErrDecrypt.
func (e *EncryptedPayload) Check() error {
	_, _, _, err := e.decode()
	return err
}

func (e *EncryptedPayload) decode() (epk, nonce, ct []byte, err error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrDecrypt, fmt.Sprintf(format, args...))
	}
	if e.Alg != EncryptionAlg {
		return nil, nil, nil, bad("alg %q is not %s", e.Alg, EncryptionAlg)
	}
	dec := base64.StdEncoding.Strict()
	if epk, err = dec.DecodeString(e.EPK); err != nil || len(epk) != 32 {
		return nil, nil, nil, bad("epk is not base64 of 32 bytes")
	}
	if nonce, err = dec.DecodeString(e.Nonce); err != nil || len(nonce) != chacha20poly1305.NonceSize {
		return nil, nil, nil, bad("nonce is not base64 of %d bytes", chacha20poly1305.NonceSize)
	}
	if base64.StdEncoding.DecodedLen(len(e.Ciphertext)) > MaxSealed+chacha20poly1305.Overhead+3 {
		return nil, nil, nil, bad("ciphertext is too large")
	}
	if ct, err = dec.DecodeString(e.Ciphertext); err != nil || len(ct) < chacha20poly1305.Overhead {
		return nil, nil, nil, bad("ciphertext is not base64 of at least %d bytes", chacha20poly1305.Overhead)
	}
	if e.ContentType != "" {
		if _, _, err := mime.ParseMediaType(e.ContentType); err != nil {
			return nil, nil, nil, bad("cty %q is not a MIME type", e.ContentType)
		}
	}
	return epk, nonce, ct, nil
}

// Open decrypts e with the recipient's private key and the same additional
// data it was sealed with, and returns the plaintext and its MIME type.
// Every failure wraps ErrDecrypt.
func (e *EncryptedPayload) Open(priv *ecdh.PrivateKey, aad []byte) (plaintext []byte, contentType string, err error) {
	epk, nonce, ct, err := e.decode()
	if err != nil {
		return nil, "", err
	}
	if priv == nil || priv.Curve() != ecdh.X25519() {
		return nil, "", fmt.Errorf("%w: %w: want an X25519 key", ErrDecrypt, ErrBadKey)
	}
	eph, err := ecdh.X25519().NewPublicKey(epk)
	if err != nil {
		return nil, "", fmt.Errorf("%w: epk: %v", ErrDecrypt, err)
	}
	aead, err := sessionCipher(priv, eph, epk, priv.PublicKey().Bytes())
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	pt, err := aead.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, "", fmt.Errorf("%w: authentication failed", ErrDecrypt)
	}
	contentType = e.ContentType
	if contentType == "" {
		contentType = wire.ContentJSON
	}
	return pt, contentType, nil
}

// DecodeEncryptedPayload reads an EncryptedPayload from an envelope's
// payload (either codec) and checks its shape; failures wrap ErrDecrypt.
func DecodeEncryptedPayload(p wire.RawPayload) (*EncryptedPayload, error) {
	var e EncryptedPayload
	if err := p.Decode(&e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	if err := e.Check(); err != nil {
		return nil, err
	}
	return &e, nil
}

// IsEncrypted reports whether a content_type says the whole payload is an
// EncryptedPayload.
func IsEncrypted(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == ContentEncrypted
}

// PrivateFields returns the fields a content_type names as encrypted one by
// one (its PrivateParam), nil when there are none. A content_type that
// does not parse names none.
func PrivateFields(contentType string) []string {
	if contentType == "" {
		return nil
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil
	}
	if f := strings.Fields(params[PrivateParam]); len(f) > 0 {
		return f
	}
	return nil
}

// PrivateContentType is the content_type of a JSON payload whose listed
// fields are encrypted.
func PrivateContentType(fields []string) string {
	return mime.FormatMediaType(wire.ContentJSON, map[string]string{PrivateParam: strings.Join(fields, " ")})
}
