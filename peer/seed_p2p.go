package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// The Go interfaces of seed 004 §5, as embedders see them. They are thin
// views of what the agent and its network already do: P2PProtocol is
// implemented by *P2P (Network.P2P), CallbackSender by *Network, and a
// TaskHandler is registered with Network.SetTaskHandler. Where a method differs from the seed it is said at
// the method; docs/conformance.md lists the differences.

// P2PTaskStatus is a task's state as P2PProtocol reports it (seed 004 §3.1).
type P2PTaskStatus = wire.Status

// AgentEndpoint names this agent and where peers reach it.
type AgentEndpoint = wire.AgentRef

// P2PProtocol is the P2P protocol handler of seed 004 §5.1. The seed's
// SetCallbackSender is not part of it: envelopes always leave through the
// agent's own transport (signed, HMAC, durable outbox), which an embedder
// can use through CallbackSender but not replace.
type P2PProtocol interface {
	// HandleMessage handles one envelope from a peer, as POST to
	// MessagePath does. It returns the response envelope of a synchronous
	// type, or nil when the message was accepted for asynchronous
	// handling. Refusals are *wire.Error.
	HandleMessage(ctx context.Context, msg *wire.UnifiedSynapseMessage) (*wire.UnifiedSynapseMessage, error)
	// SetTaskHandler registers a TaskHandler for every task type it
	// declares. Unlike the seed it returns an error (a type already
	// registered, an empty type).
	SetTaskHandler(h TaskHandler) error
	// AgentEndpoint is this agent's id, system and endpoint.
	AgentEndpoint() AgentEndpoint
	// GetTaskStatus reports a task's state; false when there is no such task.
	GetTaskStatus(taskID string) (P2PTaskStatus, bool)
	// ListTasks maps every stored task id to its state.
	ListTasks() map[string]P2PTaskStatus
}

// TaskHandler is the task handler of seed 004 §5.2. ValidateTask is called
// with the decoded payload before ExecuteTask; when it answers false the
// task fails with invalid_params, the missing fields named in its message.
type TaskHandler interface {
	ExecuteTask(ctx context.Context, taskType string, payload map[string]any) (any, error)
	ValidateTask(taskType string, payload map[string]any) ([]wire.MissingField, bool)
	// GetCapabilities lists the task types the handler runs.
	GetCapabilities() []string
}

// CallbackSender is the callback sender of seed 004 §5.3.
type CallbackSender interface {
	// SendCallback delivers one envelope to the agent at endpoint (its base
	// URL) and returns an error unless the peer accepted it.
	SendCallback(ctx context.Context, endpoint string, msg *wire.UnifiedSynapseMessage) error
}

var (
	_ P2PProtocol    = (*P2P)(nil)
	_ CallbackSender = (*Network)(nil)
)

// P2P is the seed 004 §5.1 view of an agent and its network.
type P2P struct{ n *Network }

// P2P returns the agent's P2PProtocol.
func (n *Network) P2P() *P2P { return &P2P{n: n} }

// HandleMessage implements P2PProtocol with Inbound.Deliver.
func (p *P2P) HandleMessage(ctx context.Context, msg *wire.UnifiedSynapseMessage) (*wire.UnifiedSynapseMessage, error) {
	if msg == nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "message is nil")
	}
	raw, err := wire.EncodeEnvelopeJSON(msg)
	if err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "%v", err)
	}
	header := map[string]string{HeaderOrdering: OrderingPerSender}
	a, r := p.n.inbound.deliver(ctx, msg, &transport.Inbound{Kind: transport.Envelope, Body: raw, ContentType: wire.ContentJSON}, wire.JSON, wire.JSON, header)
	if r == nil {
		return nil, a.Error
	}
	return r.Envelope, nil
}

// SetTaskHandler implements P2PProtocol with Network.SetTaskHandler.
func (p *P2P) SetTaskHandler(h TaskHandler) error { return p.n.SetTaskHandler(h) }

// AgentEndpoint implements P2PProtocol.
func (p *P2P) AgentEndpoint() AgentEndpoint {
	id := p.n.a.Identity()
	return AgentEndpoint{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint}
}

// GetTaskStatus implements P2PProtocol with Agent.Task.
func (p *P2P) GetTaskStatus(taskID string) (P2PTaskStatus, bool) {
	t, err := p.n.a.Task(taskID)
	if err != nil || t == nil {
		return "", false
	}
	return t.Status, true
}

// ListTasks implements P2PProtocol with Agent.ListTasks, page by page. The
// seed's signature has no error: on a store error it returns what it read.
func (p *P2P) ListTasks() map[string]P2PTaskStatus {
	out := map[string]P2PTaskStatus{}
	f := agent.TaskFilter{Limit: 500}
	for {
		ts, next, err := p.n.a.ListTasks(f)
		if err != nil {
			return out
		}
		for _, t := range ts {
			out[t.ID] = t.Status
		}
		if next == "" {
			return out
		}
		f.After = next
	}
}

// SetTaskHandler registers h for each task type of h.GetCapabilities (seed
// 004 §5.2). The payload must be a JSON object.
func (n *Network) SetTaskHandler(h TaskHandler) error {
	if h == nil {
		return fmt.Errorf("set task handler: handler is nil")
	}
	for _, tt := range h.GetCapabilities() {
		err := n.a.Handle(agent.Handler{Type: wire.SupportedTaskType{Type: tt}, Func: func(ctx context.Context, run *agent.Run) (any, error) {
			var payload map[string]any
			if err := json.Unmarshal(run.Payload(), &payload); err != nil || payload == nil {
				return nil, wire.Errorf(wire.CodeInvalidParams, "payload must be a JSON object")
			}
			if missing, ok := h.ValidateTask(tt, payload); !ok {
				names := make([]string, len(missing))
				for i, f := range missing {
					names[i] = f.Field
				}
				return nil, wire.Errorf(wire.CodeInvalidParams, "task %s cannot be run: missing %s", tt, strings.Join(names, ", ")).
					With("missing_fields", missing)
			}
			return h.ExecuteTask(ctx, tt, payload)
		}})
		if err != nil {
			return err
		}
	}
	return nil
}

// SendCallback implements CallbackSender: msg is sent from this agent
// (Sender is filled in when empty), signed with its key, to endpoint's
// message route, with the peer's HMAC when one is configured. It does not
// go through the outbox: a failure is returned, not retried.
func (n *Network) SendCallback(ctx context.Context, endpoint string, msg *wire.UnifiedSynapseMessage) error {
	if msg == nil {
		return fmt.Errorf("send callback: message is nil")
	}
	me := n.self()
	if msg.Sender.AgentID == "" {
		msg.Sender = me
	} else if msg.Sender.AgentID != me.AgentID {
		return fmt.Errorf("send callback: sender %q is not this agent", msg.Sender.AgentID)
	}
	if err := n.a.Sign(msg); err != nil {
		return fmt.Errorf("send callback: %w", err)
	}
	if o := n.sendEnvelope(ctx, endpoint, msg); !o.Delivered() {
		return fmt.Errorf("send callback: %w", o.Err)
	}
	return nil
}
