package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
)

// Mux is a Transport that hands each message to the Transport registered
// for the scheme of its destination URL.
type Mux struct {
	mu       sync.RWMutex
	byScheme map[string]Transport
	handled  []Transport // in the order of Handle calls
}

var _ Transport = (*Mux)(nil)

// NewMux returns an empty Mux.
func NewMux() *Mux { return &Mux{byScheme: map[string]Transport{}} }

// Handle sends messages for the given schemes ("http", "https", "mqtt",
// ...; case does not matter) through t, replacing what was there.
func (m *Mux) Handle(t Transport, schemes ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range schemes {
		m.byScheme[strings.ToLower(s)] = t
	}
	m.handled = append(m.handled, t)
}

// For returns the Transport of a destination URL's scheme.
func (m *Mux) For(to string) (Transport, error) {
	u, err := url.Parse(to)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not the URL: it may carry a secret
		}
		return nil, fmt.Errorf("destination URL: %w", err)
	}
	if u.Scheme == "" {
		return nil, errors.New("destination URL has no scheme")
	}
	m.mu.RLock()
	t, ok := m.byScheme[strings.ToLower(u.Scheme)]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no transport for %q destinations", u.Scheme)
	}
	return t, nil
}

// Send delivers msg through the Transport of its destination's scheme; a
// destination no Transport serves is Refused.
func (m *Mux) Send(ctx context.Context, msg *Message) Outcome {
	t, err := m.For(msg.To)
	if err != nil {
		return Refused(err)
	}
	return t.Send(ctx, msg)
}

// Close closes each Transport given to Handle that has a Close method
// (once per Handle call: a Transport's Close must be safe to call twice).
func (m *Mux) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, t := range m.handled {
		if c, ok := t.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
