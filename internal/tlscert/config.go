// Package tlscert is the agent's TLS server certificate: the "tls"
// section of the config (Config), the server tls.Config the listeners
// share (TLS 1.2 and 1.3 only, AEAD suites, client CA), the certificate
// pair reread from its files when they change (Source), the CAs https
// peers are verified against (PeerRoots), and a first self-signed pair
// (Generate, `synapse cert init`). It knows nothing of
// HTTP: httpapi and grpcapi serve through the tls.Config it builds.
package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// Client authentication modes of Config.ClientAuth.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request"
	ClientAuthRequire = "require"
)

// Config is the "tls" section of the config file (a contract: these
// names). Without CertFile the listeners serve plain HTTP.
type Config struct {
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// ClientCAFile, if set, holds the PEM CA certificates client
	// certificates are verified against.
	ClientCAFile string `json:"client_ca_file,omitempty"`
	// ClientAuth is none (the default), request (a certificate, if sent,
	// must verify against ClientCAFile) or require (every client must
	// present one that does, or the handshake fails).
	ClientAuth string `json:"client_auth,omitempty"`
	// MinVersion is "1.2" (the default) or "1.3".
	MinVersion string `json:"min_version,omitempty"`
	// Clients map verified client certificates onto the scopes of a
	// principal (clients.go).
	Clients []Client `json:"clients,omitempty"`
	// PeerCAFile, if set, holds the PEM CA certificates that https
	// destinations (peers, the registry, the uplink) are verified
	// against besides the system roots; it needs no cert_file.
	PeerCAFile string `json:"peer_ca_file,omitempty"`
}

// PeerRoots returns the system roots plus the CAs of PeerCAFile, or nil
// (the system roots alone) when it is not set.
func (c *Config) PeerRoots() (*x509.CertPool, error) {
	if c == nil || c.PeerCAFile == "" {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	raw, err := os.ReadFile(c.PeerCAFile)
	if err != nil {
		return nil, fmt.Errorf("tls.peer_ca_file: %w", err)
	}
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("tls.peer_ca_file %s: no PEM CERTIFICATE block in it", c.PeerCAFile)
	}
	return pool, nil
}

// Enabled reports whether c turns TLS on.
func (c *Config) Enabled() bool { return c != nil && c.CertFile != "" }

// Validate names the first wrong field of the section.
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	var errs []error
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file go together (synapse cert init writes both)"))
	}
	switch c.ClientAuth {
	case "", ClientAuthNone:
	case ClientAuthRequest, ClientAuthRequire:
		if c.ClientCAFile == "" {
			errs = append(errs, fmt.Errorf("tls.client_auth %q needs tls.client_ca_file, the CA client certificates are verified against", c.ClientAuth))
		}
	default:
		errs = append(errs, fmt.Errorf("tls.client_auth %q: use none, request or require", c.ClientAuth))
	}
	if _, err := minVersion(c.MinVersion); err != nil {
		errs = append(errs, err)
	}
	if len(c.Clients) > 0 && c.ClientCAFile == "" {
		errs = append(errs, errors.New("tls.clients needs tls.client_ca_file: only verified certificates stand for a principal"))
	}
	for i, cl := range c.Clients {
		if err := cl.validate(); err != nil {
			errs = append(errs, fmt.Errorf("tls.clients[%d]: %w", i, err))
		}
	}
	if !c.Enabled() && (c.ClientCAFile != "" || len(c.Clients) > 0) {
		errs = append(errs, errors.New("tls: client_ca_file and clients need cert_file and key_file"))
	}
	return errors.Join(errs...)
}

func minVersion(v string) (uint16, error) {
	switch v {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("tls.min_version %q: use 1.2 or 1.3 (older versions are not served)", v)
}

// suites are the TLS 1.2 suites served: Go's default suites without the
// CBC ones (ECDHE key exchange, AEAD only). TLS 1.3 suites are Go's.
var suites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// Server is what the listeners need of an enabled section: the
// tls.Config and the certificate source behind it.
type Server struct {
	// TLS is the config of the HTTP listener (ALPN http/1.1); clone it
	// and set NextProtos for another protocol (gRPC: h2).
	TLS     *tls.Config
	Source  *Source
	Clients *Clients
}

// NewServer loads the certificate pair and the client CA of c (enabled
// and valid), naming the file and the reason of any problem.
func NewServer(c *Config, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src, err := NewSource(c.CertFile, c.KeyFile, log)
	if err != nil {
		return nil, err
	}
	minV, err := minVersion(c.MinVersion)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     minV,
		CipherSuites:   suites,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: src.GetCertificate,
	}
	srv := &Server{TLS: cfg, Source: src}
	if c.ClientCAFile != "" {
		pool, err := loadPool(c.ClientCAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		switch c.ClientAuth {
		case ClientAuthRequire:
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		default:
			// A certificate is only asked for; when sent it must verify,
			// so that a mapped one stands for its principal.
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
		if srv.Clients, err = newClients(c.Clients); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// loadPool reads the PEM CA certificates of path.
func loadPool(path string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls.client_ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("tls.client_ca_file %s: no PEM CERTIFICATE block in it", path)
	}
	return pool, nil
}

// LoadCAFile reads the PEM CA certificates of path (the CLI's --cacert).
func LoadCAFile(path string) (*x509.CertPool, error) {
	pool, err := loadPool(path)
	if err != nil {
		return nil, errors.New(strings.Replace(err.Error(), "tls.client_ca_file", "CA file", 1))
	}
	return pool, nil
}
