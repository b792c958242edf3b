package command

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"

	"github.com/synapse-edge/synapse/internal/tlscert"
)

// The command line's TLS: an https agent is verified against the system
// roots, the CA certificates of --cacert, or, with --fingerprint, exactly
// the certificate of that SHA-256 (what synapse cert init prints), as
// curl --cacert and --pinnedpubkey do.

// tlsConfig is the client TLS config of the global flags; nil means Go's
// default (the system roots).
func (s *Session) tlsConfig() (*tls.Config, error) {
	g := &s.Flags
	switch {
	case g.Fingerprint != "":
		fp, err := tlscert.NormalizeFingerprint(g.Fingerprint)
		if err != nil {
			return nil, UsageErrorf("--fingerprint: %v", err)
		}
		return tlscert.PinnedConfig(fp), nil
	case g.CACert != "":
		pool, err := tlscert.LoadCAFile(g.CACert)
		if err != nil {
			return nil, UsageErrorf("--cacert: %v", err)
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
	}
	return nil, nil
}

// transport is the HTTP transport of the session's requests.
func (s *Session) transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg, err := s.tlsConfig(); err == nil && cfg != nil {
		tr.TLSClientConfig = cfg
	}
	return tr
}

// tlsHint explains a certificate the command line did not trust.
func tlsHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, tlscert.ErrFingerprint):
		return "the agent's certificate changed since its fingerprint was taken: check it on the agent (its log prints the fingerprint at start) before passing the new one to --fingerprint"
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &host),
		strings.Contains(err.Error(), "certificate signed by unknown authority"):
		return "the agent's TLS certificate is not trusted: pass --cacert FILE (the CA that signed it, or its agent.crt) or --fingerprint SHA256 (printed by synapse cert init and in the agent's log)"
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the agent serves plain HTTP: use an http:// --agent URL"
	case strings.Contains(err.Error(), "malformed HTTP response"):
		return "the agent serves TLS: use an https:// --agent URL"
	}
	return ""
}
