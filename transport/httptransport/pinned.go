package httptransport

import (
	"net/http"
	"sync"

	"github.com/synapse-edge/synapse/internal/tlspin"
)

// maxPinned bounds the clients kept for pinned certificates: one per
// fingerprint a peer was paired with. Past it they are all dropped (their
// idle connections closed) and built again as needed.
const maxPinned = 256

// pinnedClients are the clients of messages with a TLSPin, one per
// fingerprint: a connection is reused only by messages of the pin it was
// verified against, and a new pin (a peer paired again) never rides a
// connection opened under the old one.
type pinnedClients struct {
	build func(*http.Transport) *http.Client
	base  func() *http.Transport

	mu sync.Mutex
	m  map[string]*http.Client
}

// get returns the client of pin, building it on first use.
func (pc *pinnedClients) get(pin string) *http.Client {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if c, ok := pc.m[pin]; ok {
		return c
	}
	if len(pc.m) >= maxPinned {
		pc.closeLocked()
	}
	if pc.m == nil {
		pc.m = map[string]*http.Client{}
	}
	ht := pc.base()
	ht.TLSClientConfig = tlspin.Config(pin)
	c := pc.build(ht)
	pc.m[pin] = c
	return c
}

// close closes the idle connections of every pinned client and forgets
// them.
func (pc *pinnedClients) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.closeLocked()
}

func (pc *pinnedClients) closeLocked() {
	for _, c := range pc.m {
		c.CloseIdleConnections()
	}
	pc.m = nil
}
