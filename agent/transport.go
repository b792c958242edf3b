package agent

import (
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
)

// sendTimeout bounds one message sent through the default transport.
const sendTimeout = 30 * time.Second

// idleConnsPerHost keeps a connection for each request of the peer
// network's window to one peer (32, package peer), and a few more.
const idleConnsPerHost = 32 + 8

// WithTransport sends everything the agent and the layers built on it
// send (tier-1 batches, notifications, ...) through t. By default: HTTP
// for http and https destinations, with URLs a client gave (Callback
// messages) dialed through the agent's outbound policy.
func WithTransport(t transport.Transport) Option { return func(a *Agent) { a.transport = t } }

// Transport is what the agent sends through (see WithTransport).
func (a *Agent) Transport() transport.Transport { return a.transport }

// defaultTransport is the transport of an agent built without
// WithTransport.
func (a *Agent) defaultTransport() transport.Transport {
	mux := transport.NewMux()
	mux.Handle(httptransport.New(httptransport.Options{
		Guard:               a.outbound.DialContext,
		Timeout:             sendTimeout,
		MaxIdleConnsPerHost: idleConnsPerHost,
		Now:                 a.clock.Now,
	}), "http", "https")
	return mux
}
