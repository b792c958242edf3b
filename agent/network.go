package agent

import (
	"context"
	"crypto/ecdh"
	"errors"
	"log/slog"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
	"github.com/synapse-edge/synapse/wire/encrypt"
)

// Network is the peer network attached to an agent (package peer
// implements it). The engine knows peers only through it: each change of a
// task reaches Changed inside the store transaction of the change, and the
// network queues what it announces (the p2p:* messages of delegated
// tasks, the webhook callback), and Push renders the A2A push
// notifications of a task with push configs; what the engine sends
// explicitly (a cancel, information or a decision for the executing peer)
// it hands to Enqueue in the same transaction. The network
// delivers them. The agent drives the network's lifecycle from its own
// Open and Close.
type Network interface {
	// Open loads the network's state. The agent calls it once its store
	// and identity are open, before it recovers tasks.
	Open(ctx context.Context) error
	// Start begins deliveries, after the agent recovered its tasks.
	Start()
	// Close stops deliveries; the agent calls it once its engine stopped,
	// before it closes the store. Undelivered messages stay queued.
	Close(ctx context.Context)
	// Prune applies the network's retention (Prune of the agent).
	Prune(ctx context.Context) error
	// Known reports whether peer is paired.
	Known(peer string) bool
	// Refusal is why peer refuses this agent's messages now, or "".
	Refusal(peer string) string
	// Changed is called inside the store transaction of every change of
	// a task (prev is nil when the task is created): the network queues
	// what the change announces (the p2p:* messages the peer of a
	// delegated task, or of a task a peer asked for, must hear of; the
	// webhook callback of a task that reached a final state).
	Changed(tx *store.Tx, prev, next *wire.Task) error
	// Push queues, inside tx, the A2A push notifications of the change
	// of a task from prev (nil: created) to next for each of its push
	// configs (the engine calls it only for tasks that have some).
	Push(tx *store.Tx, prev, next *wire.Task, cfgs []*store.PushConfig) error
	// Enqueue queues m, a message the engine sends explicitly, durably
	// inside tx.
	Enqueue(tx *store.Tx, m Outgoing) error
	// TaskTimeout is the deadline of a task delegated to a peer without
	// ttl_seconds, from its submission (seed 004's TaskTimeout).
	TaskTimeout() time.Duration
	// PersonalDataRefusal is the refusal of a request from peer for a
	// task type marked personal_data (the contract with the peer is not
	// high enough), or nil when it may run.
	PersonalDataRefusal(peer, taskType string) *wire.Error
}

// Attach makes n the agent's network; call it (package peer's New does)
// before Open, at most once.
func (a *Agent) Attach(n Network) error {
	if a.eng != nil {
		return errors.New("attach a network: the agent is already open")
	}
	if a.net != nil {
		return errors.New("attach a network: the agent has one")
	}
	a.net = n
	return nil
}

// needNetwork refuses what only the network delivers (webhook callbacks,
// A2A push notifications) when the agent has none.
func (a *Agent) needNetwork(what string) error {
	if a.net == nil {
		return wire.Errorf(wire.CodeInvalidParams, "%s needs the peer network, which this agent does not run", what)
	}
	return nil
}

// Logger is the agent's logger.
func (a *Agent) Logger() *slog.Logger { return a.log }

// Sign signs m with the agent's Ed25519 key.
func (a *Agent) Sign(m *wire.UnifiedSynapseMessage) error { return wire.Sign(m, a.key) }

// SignBatch signs a batch of envelopes from this agent to receiver as a
// whole (wire.SignBatch).
func (a *Agent) SignBatch(receiver string, body []byte) (string, error) {
	return wire.SignBatch(a.key, a.identity.AgentID, receiver, body)
}

// X25519Key is the agent's key agreement key, derived from its Ed25519
// key (payload encryption between peers).
func (a *Agent) X25519Key() (*ecdh.PrivateKey, error) { return encrypt.X25519PrivateKey(a.key) }

// Audit appends a record of an event that stores nothing else (a refused
// message, a decryption); it is queued, not waited for.
func (a *Agent) Audit(kind, peer string, detail map[string]any) { a.audit(kind, peer, detail) }

// AuditIn appends an audit record inside tx, so that it is in the log
// exactly when the event it records is stored.
func (a *Agent) AuditIn(tx *store.Tx, kind, peer string, detail map[string]any) error {
	return a.auditIn(tx, kind, peer, detail)
}

// ActiveTasks is the number of tasks holding an execution slot.
func (a *Agent) ActiveTasks() int {
	if a.eng == nil {
		return 0
	}
	a.eng.mu.Lock()
	defer a.eng.mu.Unlock()
	return a.eng.active
}

// HandlerOf returns the handler registered for taskType (with its
// disclosure rules and personal-data mark).
func (a *Agent) HandlerOf(taskType string) (Handler, bool) {
	h := a.handlers.get(taskType)
	if h == nil {
		return Handler{}, false
	}
	return h.Handler, true
}

// TaskTypes are the registered task types, sorted.
func (a *Agent) TaskTypes() []wire.SupportedTaskType { return a.handlers.types() }

// CapabilityChanges receives a value after each change of what the agent
// declares (a handler registered, an interface provided): the registrar
// registers again.
func (a *Agent) CapabilityChanges() <-chan struct{} { return a.caps.changes() }

// ---- tasks on behalf of a peer ----
//
// The network hands the task messages of paired peers (checked: sender,
// signature, timestamp, message id) to these methods. ctx is the one of
// the message's dispatch (see WithQueued).

// AcceptFromPeer handles a peer's p2p:task_request (messageID is its
// envelope's): the task is stored with its origin and answered (confirm,
// reject or need info) in the same transaction. A request for a task id
// already here is a duplicate and has no second effect. When every
// execution slot is taken the task is rejected with rate_limited (4004)
// and a retry hint, unless the request asks to wait (QueueWhenBusy): then
// it waits a while for a slot and refuses the message (not the task) as
// overloaded, retriable (remote.go).
func (a *Agent) AcceptFromPeer(ctx context.Context, peer, messageID string, req *wire.TaskRequestPayload) error {
	return a.eng.acceptRemote(ctx, peer, messageID, req)
}

// ReportFromPeer applies a report (p2p:task_confirm, task_reject,
// task_status_update, task_need_info, task_need_human, task_complete,
// task_failed, task_ack) from the peer executing a task delegated to it.
func (a *Agent) ReportFromPeer(ctx context.Context, peer string, msgType wire.MessageType, payload wire.RawPayload) error {
	return a.eng.remoteUpdate(ctx, peer, msgType, payload)
}

// CancelFromPeer handles a peer's p2p:task_cancel for a task it asked for.
func (a *Agent) CancelFromPeer(ctx context.Context, peer string, p *wire.TaskCancelPayload) error {
	return a.eng.remoteCancel(ctx, peer, p)
}

// InfoFromPeer handles a peer's p2p:task_info_provided for a task it asked
// for.
func (a *Agent) InfoFromPeer(ctx context.Context, peer string, p *wire.TaskInfoProvidedPayload) error {
	return a.eng.remoteInfo(ctx, peer, p)
}

// DecisionFromPeer handles a peer's p2p:human_decision for a task it asked
// for.
func (a *Agent) DecisionFromPeer(peer string, d *wire.HumanDecisionPayload) error {
	return a.eng.remoteDecision(peer, d)
}

type queuedKey struct{}

// WithQueued returns a context under which the task methods on behalf of
// a peer call f once the store write of their effect is queued (the
// store applies writes in queue order): the network's per-sender order
// lets the sender's next message start then. Only the first call counts
// for the caller; f must be safe to call more than once.
func WithQueued(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, queuedKey{}, f)
}

// queued calls the function WithQueued put in ctx, if any.
func queued(ctx context.Context) {
	if f, ok := ctx.Value(queuedKey{}).(func()); ok {
		f()
	}
}

type writeKey struct{}

// WithWrite returns a context under which the store write of the effect
// of a task method on behalf of a peer also runs w, in the same
// transaction: the network records the message as seen with its effect.
func WithWrite(ctx context.Context, w func(*store.Tx) error) context.Context {
	return context.WithValue(ctx, writeKey{}, w)
}

// alsoWrite is fn followed by the write WithWrite put in ctx, if any.
func alsoWrite(ctx context.Context, fn func(*store.Tx) error) func(*store.Tx) error {
	w, ok := ctx.Value(writeKey{}).(func(*store.Tx) error)
	if !ok {
		return fn
	}
	return func(tx *store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return w(tx)
	}
}
