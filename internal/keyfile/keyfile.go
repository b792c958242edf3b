// Package keyfile keeps an agent's secrets in its data directory: the
// Ed25519 identity key (a PKCS #8 PEM file) and the admin token, each
// created at first start with mode 0600, written atomically, and read
// afterwards.
package keyfile

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/synapse-edge/synapse/internal/atomicfile"
)

// DecodeKey decodes the Ed25519 key of a PKCS #8 PEM file's bytes raw;
// its errors name the key as what, in the file at path.
func DecodeKey(raw []byte, path, what string) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(raw)
	if blk == nil {
		return nil, fmt.Errorf("%s %s: not a PEM file", what, path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s %s: not an Ed25519 key", what, path)
	}
	return ek, nil
}

// LoadOrCreateKey reads the Ed25519 key of the PKCS #8 PEM file at path,
// or creates the key and the file (mode 0600) when there is none.
func LoadOrCreateKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		return DecodeKey(raw, path, "identity key")
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	return priv, nil
}

// LoadOrCreateToken reads the token in the file at path (surrounding
// space trimmed), or creates a random one (prefix and 32 base64url
// characters) and the file (mode 0600) when there is none. An empty file
// is an error.
func LoadOrCreateToken(path, prefix string) (string, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		if tok := strings.TrimSpace(string(raw)); tok != "" {
			return tok, nil
		}
		return "", fmt.Errorf("admin token file %s is empty", path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := prefix + base64.RawURLEncoding.EncodeToString(b[:])
	if err := atomicfile.Write(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return tok, nil
}
