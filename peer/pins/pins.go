// Package pins is the table of TLS certificates pinned for the peers'
// endpoints: which fingerprint a message to a URL must be sent under, and
// which refused certificates were already reported, and the check of a
// fingerprint given at pairing. Package peer fills the table from the
// peer records and logs.
package pins

import (
	"errors"
	"net/url"
	"strings"
	"sync"

	"github.com/synapse-edge/synapse/internal/tlspin"
	"github.com/synapse-edge/synapse/wire"
)

// Pin is the certificate pinned for a peer's endpoint.
type Pin struct {
	Fingerprint string // SHA-256, lowercase hex
	Peer        string // agent_id
}

// Table maps endpoints to pins. The zero value is empty and ready; it is
// safe for concurrent use.
type Table struct {
	mu sync.RWMutex
	m  map[string]Pin // by endpoint (a base URL without a trailing slash)
	// refused is, per pinned fingerprint, the certificate last refused
	// in its place.
	refused map[string]string
}

// Set replaces the table with byEndpoint (which it keeps).
func (t *Table) Set(byEndpoint map[string]Pin) {
	t.mu.Lock()
	t.m = byEndpoint
	t.mu.Unlock()
}

// Of returns the pin of a message to to: that of a pinned endpoint, or of
// the endpoint a document is under; the zero Pin when there is none.
func (t *Table) Of(to string) Pin {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if len(t.m) == 0 {
		return Pin{}
	}
	if p, ok := t.m[to]; ok {
		return p
	}
	for ep, p := range t.m {
		if strings.HasPrefix(to, ep+"/") {
			return p
		}
	}
	return Pin{}
}

// Outcome notes the outcome of a send under pinned: a delivery ends the
// refusals noted; a *tlspin.MismatchError in err is noted and returned,
// with news true for the first refusal of that certificate since the pin
// last delivered or another certificate came.
func (t *Table) Outcome(pinned string, delivered bool, err error) (mm *tlspin.MismatchError, news bool) {
	if !errors.As(err, &mm) {
		if delivered {
			t.delivered(pinned)
		}
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refused == nil {
		t.refused = map[string]string{}
	}
	news = t.refused[pinned] != mm.Got
	t.refused[pinned] = mm.Got
	return mm, news
}

func (t *Table) delivered(pinned string) {
	t.mu.RLock()
	_, ok := t.refused[pinned]
	t.mu.RUnlock()
	if ok {
		t.mu.Lock()
		delete(t.refused, pinned)
		t.mu.Unlock()
	}
}

// Check normalizes the fingerprint fp to pin endpoint's certificate
// under (hex SHA-256, with or without colons); "" stays "". It is a
// TPError for the field tls_fingerprint when fp is not a SHA-256 or
// endpoint is not https.
func Check(endpoint, fp string) (string, error) {
	if fp == "" {
		return "", nil
	}
	norm, err := tlspin.Normalize(fp)
	if err != nil {
		return "", wire.Errorf(wire.CodeInvalidParams, "tls_fingerprint: %v", err).With("field", "tls_fingerprint")
	}
	if u, err := url.Parse(endpoint); err != nil || u.Scheme != "https" {
		return "", wire.Errorf(wire.CodeInvalidParams, "tls_fingerprint pins the certificate of an https endpoint; %s is not one", endpoint).
			With("field", "tls_fingerprint")
	}
	return norm, nil
}
