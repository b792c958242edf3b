package tlscert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/synapse-edge/synapse/internal/atomicfile"
)

// Files of a generated pair, in its directory.
const (
	CertName = "agent.crt"
	KeyName  = "agent.key"
)

// Validity of a generated certificate.
const generatedValidity = 5 * 365 * 24 * time.Hour

// ErrExists is returned by Generate when the directory already holds a
// pair.
var ErrExists = errors.New("a certificate pair is already there")

// Generate writes a new ECDSA P-256 key (agent.key, mode 0600) and a
// self-signed certificate for hosts (names and IP addresses; agent.crt)
// into dir, and returns the certificate. It overwrites nothing.
func Generate(dir string, hosts []string, now time.Time) (*x509.Certificate, error) {
	if len(hosts) == 0 {
		return nil, errors.New("cert init: no host name or address to certify")
	}
	certPath, keyPath := filepath.Join(dir, CertName), filepath.Join(dir, KeyName)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("%w: %s (remove it first to make a new one)", ErrExists, p)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0], Organization: []string{"synapse agent"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(generatedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", keyPath, err)
	}
	if err := atomicfile.Write(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", certPath, err)
	}
	return x509.ParseCertificate(der)
}
