package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/internal/tlspin"
)

// checkEvery is how often, at most, a handshake looks at the files'
// modification times and sizes: a changed pair is served from the next
// handshake after it, without a goroutine or a restart.
const checkEvery = time.Second

// Source serves the certificate pair of two files, reread when either
// file changes (its modification time or size) or on Reload. A new pair
// that does not load, or whose certificate is expired or not yet valid,
// is refused: the old pair stays served and the log says why.
type Source struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   fileStamp // of the files the served pair (or the last refused one) came from
	checked time.Time
}

// fileStamp identifies a version of the two files.
type fileStamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

// NewSource loads the pair of certFile and keyFile; an error names the
// file and the reason.
func NewSource(certFile, keyFile string, log *slog.Logger) (*Source, error) {
	s := &Source{certFile: certFile, keyFile: keyFile, log: log.With("component", "tls"), now: time.Now}
	st, _ := s.stat()
	cert, err := s.load()
	if err != nil {
		return nil, err
	}
	s.cert, s.stamp, s.checked = cert, st, s.now()
	return s, nil
}

func (s *Source) stat() (fileStamp, error) {
	c, err := os.Stat(s.certFile)
	if err != nil {
		return fileStamp{}, err
	}
	k, err := os.Stat(s.keyFile)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{c.ModTime(), k.ModTime(), c.Size(), k.Size()}, nil
}

// load reads and checks the pair.
func (s *Source) load() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(s.certFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file: %w", err)
	}
	keyPEM, err := os.ReadFile(s.keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.key_file: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file %s and tls.key_file %s: %w", s.certFile, s.keyFile, err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls.cert_file %s: %w", s.certFile, err)
		}
		cert.Leaf = leaf
	}
	now := s.now()
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("tls.cert_file %s: the certificate expired at %s (renew it, or synapse cert init for a new self-signed one)", s.certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("tls.cert_file %s: the certificate is not valid before %s (is the clock right?)", s.certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return &cert, nil
}

// GetCertificate is the tls.Config's GetCertificate: the served pair,
// after looking at most once per checkEvery whether the files changed.
func (s *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); now.Sub(s.checked) >= checkEvery {
		s.checked = now
		if st, err := s.stat(); err == nil && st != s.stamp {
			s.reloadLocked(st)
		}
	}
	return s.cert, nil
}

// Reload rereads the files now; an error (the old pair kept) says why.
func (s *Source) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, _ := s.stat()
	return s.reloadLocked(st)
}

func (s *Source) reloadLocked(st fileStamp) error {
	// A refused version is not retried until the files change again.
	s.stamp = st
	cert, err := s.load()
	if err != nil {
		s.log.Error("new certificate refused, the old one is kept", "err", err, "fingerprint", Fingerprint(s.cert.Leaf))
		return err
	}
	s.log.Info("certificate reloaded", "cert_file", s.certFile, "fingerprint", Fingerprint(cert.Leaf),
		"not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	s.cert = cert
	return nil
}

// Leaf returns the certificate served.
func (s *Source) Leaf() *x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert.Leaf
}

// Fingerprint is the SHA-256 of a certificate's DER, in lowercase hex:
// what `synapse cert init` prints and --fingerprint pins.
func Fingerprint(c *x509.Certificate) string { return tlspin.Fingerprint(c) }

// ErrFingerprint is returned when a server's certificate is not the
// pinned one.
var ErrFingerprint = tlspin.ErrMismatch

// NormalizeFingerprint accepts a SHA-256 fingerprint as hex with or
// without colons, in either case (openssl x509 -fingerprint -sha256
// prints AA:BB:...), and returns it as lowercase hex.
func NormalizeFingerprint(s string) (string, error) { return tlspin.Normalize(s) }

// PinnedConfig returns a client tls.Config that accepts exactly the
// certificate of fingerprint (normalized), whatever its names or issuer:
// the trust of pairing, as for the peer's Ed25519 key.
func PinnedConfig(fingerprint string) *tls.Config { return tlspin.Config(fingerprint) }
