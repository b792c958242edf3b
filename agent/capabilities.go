package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/synapse-edge/synapse/wire"
)

// Capabilities (seed 000). What an agent declares is derived from what is
// running, never from a list kept by hand:
//
//   - task types are the registered handlers, with their schemas;
//   - the standard interfaces are those the components that implement them
//     registered with ProvideInterface when they started: the agent core
//     (AgentIdentity, CapabilitiesProvider, TaskStatusProvider) when it
//     opens, the P2P layer (MessageHandler, P2PTaskHandler,
//     CallbackReceiver, CallbackSender, HybridTransport) when it starts,
//     the HTTP server for the routes and middleware it serves, the
//     human-in-the-loop manager when it starts;
//   - content types, transport modes and the feature flags follow from
//     those interfaces, the limits from the configuration;
//   - the protocol profile (seed 002 §8.2) follows from the basic
//     interfaces and what negotiation serves (negotiate.Responder.Profile).

// CapabilitiesProvider is the entry point of capability declaration (seed
// 000 §1.1). Every method is idempotent.
type CapabilitiesProvider interface {
	GetCapabilities(ctx context.Context) (*wire.AgentCapabilities, error)
	GetSupportedInterfaces() []wire.ImplementedInterface
	GetTaskTypeCapabilities(taskType string) (*wire.SupportedTaskType, error)
}

var _ CapabilitiesProvider = (*Agent)(nil)

// Errors of the capability declaration.
var (
	// ErrUnknownInterface: ProvideInterface with a name that is not one of
	// wire.StandardInterfaces.
	ErrUnknownInterface = errors.New("not a standard interface")
	// ErrTaskTypeUnsupported: GetTaskTypeCapabilities of a task type no
	// handler is registered for.
	ErrTaskTypeUnsupported = errors.New("task type not supported")
)

// SelfID names this agent in Compliance.
const SelfID = "self"

// InterfacesPath is the path of the interface list.
const InterfacesPath = wire.APIPrefix + "/capabilities/interfaces"

// capabilityState is the set of interfaces provided, and a signal for the
// registrar that what the agent declares changed. The zero value is ready.
type capabilityState struct {
	mu     sync.Mutex
	ifaces map[string]bool
	change chan struct{}
}

// changes returns the channel that receives a value after each change.
func (c *capabilityState) changes() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.change == nil {
		c.change = make(chan struct{}, 1)
	}
	return c.change
}

// changed signals a change without waiting.
func (c *capabilityState) changed() {
	c.mu.Lock()
	if c.change == nil {
		c.change = make(chan struct{}, 1)
	}
	ch := c.change
	c.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *capabilityState) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ifaces[name]
}

// ProvideInterface declares that the calling component implements the
// standard interface name (seed 000 §6.1) in this agent. Providing one
// twice is not an error; a name that is not a standard interface is
// (ErrUnknownInterface). Components call it when they start.
func (a *Agent) ProvideInterface(name string) error { return a.ProvideInterfaces(name) }

// ProvideInterfaces is ProvideInterface for several names at once (one
// change for the registry). Nothing is provided when a name is unknown.
func (a *Agent) ProvideInterfaces(names ...string) error {
	for _, n := range names {
		if _, ok := wire.StandardInterface(n); !ok {
			return fmt.Errorf("provide interface %q: %w", n, ErrUnknownInterface)
		}
	}
	c := &a.caps
	c.mu.Lock()
	if c.ifaces == nil {
		c.ifaces = map[string]bool{}
	}
	added := false
	for _, n := range names {
		if !c.ifaces[n] {
			c.ifaces[n], added = true, true
		}
	}
	c.mu.Unlock()
	if added {
		a.log.Debug("interfaces provided", "names", names)
		c.changed()
	}
	return nil
}

// ProvidesInterface reports whether a component provided name.
func (a *Agent) ProvidesInterface(name string) bool { return a.caps.has(name) }

// GetSupportedInterfaces lists the standard interfaces provided, in the
// order of the standard registry.
func (a *Agent) GetSupportedInterfaces() []wire.ImplementedInterface {
	c := &a.caps
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]wire.ImplementedInterface, 0, len(c.ifaces))
	for _, std := range wire.StandardInterfaces {
		if c.ifaces[std.Name] {
			out = append(out, std)
		}
	}
	return out
}

// GetCapabilities declares what the agent can do (seed 000 §2).
func (a *Agent) GetCapabilities(ctx context.Context) (*wire.AgentCapabilities, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return a.Capabilities(), nil
}

// GetTaskTypeCapabilities describes one task type; ErrTaskTypeUnsupported
// (and nil) when no handler runs it.
func (a *Agent) GetTaskTypeCapabilities(taskType string) (*wire.SupportedTaskType, error) {
	h := a.handlers.get(taskType)
	if h == nil {
		return nil, fmt.Errorf("%w: %q", ErrTaskTypeUnsupported, taskType)
	}
	t := h.Type
	t.Capabilities = slices.Clone(t.Capabilities)
	return &t, nil
}

// Capabilities is GetCapabilities without a context: the declaration of
// what is registered and running now.
func (a *Agent) Capabilities() *wire.AgentCapabilities {
	has := a.ProvidesInterface
	c := wire.DefaultAgentCapabilities()
	c.AgentID, c.AgentName, c.SystemID = a.identity.AgentID, a.identity.AgentName, a.identity.SystemID
	c.SupportedTaskTypes = a.handlers.types()
	// Task payloads and envelopes are JSON or msgpack wherever they arrive;
	// files only through the multipart route.
	c.SupportedContentTypes = []string{wire.ContentJSON, wire.ContentMsgpack}
	if has(wire.IfaceMultipartTransport) {
		c.SupportedContentTypes = append(c.SupportedContentTypes, "multipart/form-data")
	}
	c.SupportedTransportModes = []wire.TransportMode{}
	overHTTP := has(wire.IfaceHTTPTransport)
	for _, m := range []struct {
		mode wire.TransportMode
		ok   bool
	}{
		{wire.TransportCallback, has(wire.IfaceCallbackSender)},
		{wire.TransportPolling, overHTTP && has(wire.IfaceTaskStatusProvider)},
		{wire.TransportSync, overHTTP},
		{wire.TransportHybrid, overHTTP && has(wire.IfaceHybridTransport)},
	} {
		if m.ok {
			c.SupportedTransportModes = append(c.SupportedTransportModes, m.mode)
		}
	}
	c.MaxFileSize = a.cfg.Load().MaxFileSize
	c.MaxConcurrentTasks = a.cfg.Load().MaxConcurrentTasks
	c.MaxTaskDuration = a.cfg.Load().MaxTaskDurationSeconds
	// Handlers report progress through Run.Progress; it is stored and
	// streamed (or polled) like any event.
	c.SupportProgressUpdates = true
	c.SupportStreaming = has(wire.IfaceStreamingTransport)
	c.SupportHiL = has(wire.IfaceHILHandler)
	c.SupportGroups = has(wire.IfaceGroupManager)
	r := a.Responder()
	c.ProtocolProfile = string(r.Profile())
	return c
}

// Interfaces is the answer of GET /capabilities/interfaces.
func (a *Agent) Interfaces() *wire.InterfaceList {
	return &wire.InterfaceList{AgentID: a.identity.AgentID, ProtocolVersion: wire.ProtocolVersion,
		Interfaces: a.GetSupportedInterfaces()}
}

// provideCoreInterfaces declares what the agent core implements once it
// is open: its identity, its capability declaration, and task status
// queries (the engine).
func (a *Agent) provideCoreInterfaces() {
	// The names are standard: this cannot fail.
	_ = a.ProvideInterfaces(wire.IfaceAgentIdentity, wire.IfaceCapabilitiesProvider, wire.IfaceTaskStatusProvider)
}
