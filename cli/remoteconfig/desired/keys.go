package desired

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/synapse-edge/synapse/internal/keyfile"
)

// An operator key is kept as the agent's own key is: an Ed25519 private
// key in a PKCS #8 PEM file, mode 0600 (openssl pkey -in FILE -pubout
// reads it too).

// GenerateKey writes a new operator key to path, which must not exist,
// and returns its public key as remote_config.operator_keys takes it
// (standard base64 of the 32 bytes).
func GenerateKey(path string) (string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("operator key: %w (keygen never overwrites a key)", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("operator key: %w", err)
	}
	if err := errors.Join(f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return "", fmt.Errorf("operator key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(pub), nil
}

// ReadKey reads the operator key in the PEM file at path.
func ReadKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("operator key: %w", err)
	}
	return keyfile.DecodeKey(raw, path, "operator key")
}
