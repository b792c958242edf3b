package tlscert

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	"github.com/synapse-edge/synapse/auth"
)

// Client maps a verified client certificate onto a principal with the
// scopes of a token: its subject common name (Subject) or one of its
// subject alternative names (SAN: a DNS name, an e-mail address, a URI
// or an IP address, as written in the certificate). Exactly one of the
// two is set.
type Client struct {
	Subject string   `json:"subject,omitempty"`
	SAN     string   `json:"san,omitempty"`
	Name    string   `json:"name"`
	Scopes  []string `json:"scopes"`
}

func (c Client) validate() error {
	if (c.Subject == "") == (c.SAN == "") {
		return errors.New("set exactly one of subject (the certificate's common name) and san")
	}
	if c.Name == "" {
		return errors.New("name is required (the principal's name in the audit log)")
	}
	if len(c.Scopes) == 0 {
		return errors.New("scopes is empty: a certificate without scopes may do nothing")
	}
	for _, s := range c.Scopes {
		if !slices.Contains(auth.KnownScopes, auth.Scope(s)) {
			return fmt.Errorf("unknown scope %q (known: %v)", s, auth.KnownScopes)
		}
	}
	return nil
}

// Clients finds the principal of a verified client certificate.
type Clients struct {
	list []Client
}

func newClients(list []Client) (*Clients, error) {
	for i, c := range list {
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("tls.clients[%d]: %w", i, err)
		}
	}
	return &Clients{list: list}, nil
}

// Principal returns the principal of the first entry matching cert, a
// certificate the handshake verified against the client CA.
func (cs *Clients) Principal(cert *x509.Certificate) (auth.Principal, bool) {
	if cs == nil || cert == nil {
		return auth.Principal{}, false
	}
	for _, c := range cs.list {
		if matches(c, cert) {
			p := auth.Principal{ID: "cert:" + c.Name, Name: c.Name}
			for _, s := range c.Scopes {
				p.Scopes = append(p.Scopes, auth.Scope(s))
			}
			return p, true
		}
	}
	return auth.Principal{}, false
}

func matches(c Client, cert *x509.Certificate) bool {
	if c.Subject != "" {
		return cert.Subject.CommonName == c.Subject
	}
	if slices.Contains(cert.DNSNames, c.SAN) || slices.Contains(cert.EmailAddresses, c.SAN) {
		return true
	}
	for _, u := range cert.URIs {
		if u.String() == c.SAN {
			return true
		}
	}
	for _, ip := range cert.IPAddresses {
		if ip.String() == c.SAN {
			return true
		}
	}
	return false
}
