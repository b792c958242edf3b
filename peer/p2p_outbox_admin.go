package peer

import (
	"context"

	"github.com/synapse-edge/synapse/outbox"
)

// Administration of the outbox (the admin routes GET /outbox, POST
// /outbox/{id}/retry, POST /outbox/retry, DELETE /outbox/{id}): package
// outbox's (outbox.Queue's List, Retry, RetryDeadLetters and Drop),
// reached through Network.Outbox.

// OutboxEntry is an outbox item as the API lists it.
type OutboxEntry = outbox.Entry

// OutboxQuery selects outbox items.
type OutboxQuery = outbox.Query

// OutboxAdmin is the administration of the network's outbox
// (Network.Outbox): its list, retries and drops.
type OutboxAdmin struct {
	n *Network // its queue, set by Open
}

// List lists queued or dead messages in delivery order and returns the
// next page token ("" at the end).
func (a *OutboxAdmin) List(q OutboxQuery) ([]OutboxEntry, string, error) { return a.n.out.List(q) }

// Retry requeues a dead letter (at its original place, attempts reset)
// or makes a pending message due now.
func (a *OutboxAdmin) Retry(ctx context.Context, id string) (*OutboxEntry, error) {
	return a.n.out.Retry(ctx, id)
}

// RetryDeadLetters requeues every dead letter of a peer (or, with url set
// instead, of a webhook URL) in their original order; it returns how many.
func (a *OutboxAdmin) RetryDeadLetters(ctx context.Context, peer, url string) (int, error) {
	return a.n.out.RetryDeadLetters(ctx, peer, url)
}

// Drop deletes a queued or dead message for good.
func (a *OutboxAdmin) Drop(ctx context.Context, id string) error { return a.n.out.Drop(ctx, id) }
