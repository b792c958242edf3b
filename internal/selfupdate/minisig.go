package selfupdate

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxSignatureBytes bounds a .minisig file (a real one is about 300
// bytes; the trusted comment is one line).
const MaxSignatureBytes = 4096

// PublicKey is a minisign public key: its 8-byte key id and the Ed25519
// key.
type PublicKey struct {
	ID  [8]byte
	Key ed25519.PublicKey
}

// KeyID is the key id as minisign prints it: the little-endian integer in
// upper-case hex.
func (k PublicKey) KeyID() string { return keyIDString(k.ID) }

func keyIDString(id [8]byte) string {
	return fmt.Sprintf("%016X", binary.LittleEndian.Uint64(id[:]))
}

// ParsePublicKey reads one key: the base64 line of a minisign .pub file
// ("RWQ..."), 42 bytes: "Ed", the key id, the 32-byte key.
func ParsePublicKey(line string) (PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return PublicKey{}, fmt.Errorf("release key: not base64: %w", err)
	}
	if len(raw) != 2+8+ed25519.PublicKeySize || string(raw[:2]) != "Ed" {
		return PublicKey{}, fmt.Errorf("release key: not a minisign public key (want 42 bytes starting \"Ed\", have %d)", len(raw))
	}
	var k PublicKey
	copy(k.ID[:], raw[2:10])
	k.Key = ed25519.PublicKey(bytes.Clone(raw[10:]))
	return k, nil
}

// ParsePublicKeys reads the keys of a minisign .pub file, or of several
// concatenated: every line but the "untrusted comment:" ones and blank
// ones is a key.
func ParsePublicKeys(text string) ([]PublicKey, error) {
	var keys []PublicKey
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "untrusted comment:") {
			continue
		}
		k, err := ParsePublicKey(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no release key in the file")
	}
	return keys, nil
}

// Signature is a parsed .minisig file.
type Signature struct {
	// Algorithm is "ED" (prehashed, BLAKE2b-512); Parse refuses others.
	Algorithm string
	KeyID     [8]byte
	Sig       []byte // Ed25519 over the BLAKE2b-512 hash of the file
	// TrustedComment is the text after "trusted comment: ", which Global
	// signs with Sig.
	TrustedComment string
	Global         []byte
}

// ParseSignature reads a .minisig file: an untrusted comment line, the
// base64 signature line ("ED", key id, 64 bytes), the trusted comment
// line, the base64 global signature line.
func ParseSignature(data []byte) (*Signature, error) {
	if len(data) > MaxSignatureBytes {
		return nil, fmt.Errorf("signature: %d bytes, more than the %d a minisign signature has", len(data), MaxSignatureBytes)
	}
	if !utf8.Valid(data) {
		return nil, errors.New("signature: not text")
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n"), "\n")
	if len(lines) != 4 {
		return nil, fmt.Errorf("signature: %d lines, a minisign signature has 4", len(lines))
	}
	if !strings.HasPrefix(lines[0], "untrusted comment:") {
		return nil, errors.New("signature: line 1 is not \"untrusted comment: ...\"")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(lines[1]))
	if err != nil || len(raw) != 2+8+ed25519.SignatureSize {
		return nil, errors.New("signature: line 2 is not 74 base64 bytes (algorithm, key id, signature)")
	}
	s := &Signature{Algorithm: string(raw[:2]), Sig: bytes.Clone(raw[10:])}
	copy(s.KeyID[:], raw[2:10])
	switch s.Algorithm {
	case "ED":
	case "Ed":
		return nil, errors.New("signature: a legacy (not prehashed) minisign signature; sign with prehashing (minisign -S, build/minisign sign)")
	default:
		return nil, fmt.Errorf("signature: unknown algorithm %q", s.Algorithm)
	}
	tc, ok := strings.CutPrefix(lines[2], "trusted comment: ")
	if !ok {
		return nil, errors.New("signature: line 3 is not \"trusted comment: ...\"")
	}
	s.TrustedComment = tc
	g, err := base64.StdEncoding.DecodeString(strings.TrimSpace(lines[3]))
	if err != nil || len(g) != ed25519.SignatureSize {
		return nil, errors.New("signature: line 4 is not a 64-byte base64 global signature")
	}
	s.Global = g
	return s, nil
}

// ErrUntrusted is the error of a signature that no trusted key made.
var ErrUntrusted = errors.New("signature: not by a trusted release key")

// Verify checks s over the BLAKE2b-512 hash of the file (blake) against
// keys: the key with s's key id must be trusted and both signatures must
// hold.
func (s *Signature) Verify(keys []PublicKey, blake []byte) error {
	for _, k := range keys {
		if k.ID != s.KeyID {
			continue
		}
		if !ed25519.Verify(k.Key, blake, s.Sig) {
			return fmt.Errorf("%w: key %s's signature does not match the file (it was changed, or the signature is of another file)", ErrUntrusted, k.KeyID())
		}
		if !ed25519.Verify(k.Key, append(bytes.Clone(s.Sig), s.TrustedComment...), s.Global) {
			return fmt.Errorf("%w: key %s's signature of the trusted comment does not match", ErrUntrusted, k.KeyID())
		}
		return nil
	}
	return fmt.Errorf("%w: key %s is not one of the %d release key(s) of the config", ErrUntrusted, keyIDString(s.KeyID), len(keys))
}
