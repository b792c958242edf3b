// Package tlspin is trust by certificate fingerprint: a TLS client that
// accepts exactly the server certificate whose SHA-256 it was given,
// whatever its names or issuer, as `synapse peer add --fingerprint` and
// the CLI's --fingerprint pin it. It is apart from internal/tlscert (the
// server side, which knows the config and the principals) so that the
// HTTP transport can pin a peer without linking them.
package tlspin

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrMismatch is the error of a server certificate that is not the
// pinned one (a *MismatchError says which it was).
var ErrMismatch = errors.New("the server's certificate does not have the pinned SHA-256 fingerprint")

// MismatchError is the certificate a server showed under a pin it does
// not match.
type MismatchError struct {
	Got, Pinned string // lowercase hex SHA-256; Got is "" when none was sent
}

func (e *MismatchError) Error() string {
	if e.Got == "" {
		return ErrMismatch.Error() + ": the server sent no certificate, pinned " + e.Pinned
	}
	return fmt.Sprintf("%v: got %s, pinned %s", ErrMismatch, e.Got, e.Pinned)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Sum is the SHA-256 of a DER certificate in lowercase hex.
func Sum(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// Fingerprint is Sum of a parsed certificate ("" for nil).
func Fingerprint(c *x509.Certificate) string {
	if c == nil {
		return ""
	}
	return Sum(c.Raw)
}

// Normalize accepts a SHA-256 fingerprint as hex with or without colons,
// in either case (openssl x509 -fingerprint -sha256 prints AA:BB:...),
// and returns it as lowercase hex.
func Normalize(s string) (string, error) {
	b := make([]byte, 0, 64)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			continue
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
			b = append(b, c)
		case c >= 'A' && c <= 'F':
			b = append(b, c+'a'-'A')
		default:
			return "", fmt.Errorf("fingerprint %q: use the 64 hex digits of a SHA-256 (synapse cert init prints it)", s)
		}
		if len(b) > 64 {
			break
		}
	}
	if len(b) != 64 {
		return "", fmt.Errorf("fingerprint %q is not the 64 hex digits of a SHA-256 (synapse cert init prints it)", s)
	}
	return string(b), nil
}

// Config returns a client tls.Config (TLS 1.2 and later) that accepts
// exactly the leaf certificate of fingerprint (normalized), the trust of
// pairing, as for a peer's Ed25519 key. Its handshake fails with a
// *MismatchError on any other certificate.
func Config(fingerprint string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by the pin check below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return &MismatchError{Pinned: fingerprint}
			}
			if got := Sum(raw[0]); got != fingerprint {
				return &MismatchError{Got: got, Pinned: fingerprint}
			}
			return nil
		},
	}
}
