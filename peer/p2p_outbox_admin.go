package peer

import (
	"context"
	"errors"

	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Administration of the outbox: list, retry, drop (the admin routes
// GET /outbox, POST /outbox/{id}/retry, POST /outbox/retry, DELETE
// /outbox/{id}).

// OutboxEntry is an outbox item as the API lists it.
type OutboxEntry struct {
	ID            string `json:"id" msgpack:"id"`
	State         string `json:"state" msgpack:"state"`
	Peer          string `json:"peer,omitempty" msgpack:"peer,omitempty"`
	URL           string `json:"url,omitempty" msgpack:"url,omitempty"`
	Type          string `json:"type" msgpack:"type"`
	CorrelationID string `json:"correlation_id,omitempty" msgpack:"correlation_id,omitempty"`
	Attempts      int    `json:"attempts" msgpack:"attempts"`
	LastError     string `json:"last_error,omitempty" msgpack:"last_error,omitempty"`
	CreatedAt     string `json:"created_at" msgpack:"created_at"`
	NextAttemptAt string `json:"next_attempt_at,omitempty" msgpack:"next_attempt_at,omitempty"`
	DeadAt        string `json:"dead_at,omitempty" msgpack:"dead_at,omitempty"`
}

func outboxEntry(it *outbox.Item, s outbox.State) OutboxEntry {
	e := OutboxEntry{ID: it.ID, State: string(s), Peer: it.Peer, URL: it.URL, Type: it.Type,
		CorrelationID: it.CorrelationID, Attempts: it.Attempts, LastError: it.LastError,
		CreatedAt: wire.FormatTime(it.CreatedAt)}
	if s == outbox.Pending {
		e.NextAttemptAt = wire.FormatTime(it.NextAttempt)
	} else if !it.DeadAt.IsZero() {
		e.DeadAt = wire.FormatTime(it.DeadAt)
	}
	return e
}

// OutboxAdmin is the administration of the network's outbox
// (Network.Outbox): its list, retries and drops.
type OutboxAdmin struct {
	n *Network // its store, clock and queue, set by Open
}

// OutboxQuery selects outbox items.
type OutboxQuery struct {
	// State is "pending" (default) or "dead".
	State string
	// Peer or URL keeps one destination.
	Peer, URL string
	// After is a page token; Limit defaults to 100.
	After string
	Limit int
}

// List lists queued or dead messages in delivery order and returns the
// next page token ("" at the end).
func (a *OutboxAdmin) List(q OutboxQuery) ([]OutboxEntry, string, error) {
	state := outbox.Pending
	switch q.State {
	case "", string(outbox.Pending):
	case string(outbox.Dead):
		state = outbox.Dead
	default:
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "state must be pending or dead").With("field", "state")
	}
	f := outbox.Filter{State: state, After: q.After, Limit: q.Limit}
	switch {
	case q.Peer != "" && q.URL != "":
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "give peer or url, not both")
	case q.Peer != "":
		f.Dest = outbox.PeerDest(q.Peer)
	case q.URL != "":
		f.Dest = outbox.URLDest(q.URL)
	}
	var items []*outbox.Item
	var next string
	err := a.n.db.View(func(tx *store.Tx) error {
		var err error
		items, next, err = outbox.List(tx, f)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "page_token is not one this agent gave (or that item left the list)").With("field", "page_token")
	}
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeSysStorage, "list outbox: %v", err)
	}
	out := make([]OutboxEntry, len(items))
	for i, it := range items {
		out[i] = outboxEntry(it, state)
	}
	return out, next, nil
}

// Retry requeues a dead letter (at its original place, attempts reset)
// or makes a pending message due now.
func (a *OutboxAdmin) Retry(ctx context.Context, id string) (*OutboxEntry, error) {
	o := a.n.out
	var it *outbox.Item
	err := a.n.db.Update(ctx, func(tx *store.Tx) error {
		cur, state, err := outbox.Get(tx, id)
		if err != nil {
			return err
		}
		if state == outbox.Pending {
			it = cur
			return nil
		}
		it, err = outbox.Revive(tx, id, a.n.clock.Now().UTC())
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "no outbox message %q", id).With("id", id)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "retry outbox message: %v", err)
	}
	o.poke(it.Dest(), true)
	e := outboxEntry(it, outbox.Pending)
	return &e, nil
}

// RetryDeadLetters requeues every dead letter of a peer (or, with url set
// instead, of a webhook URL) in their original order; it returns how many.
func (a *OutboxAdmin) RetryDeadLetters(ctx context.Context, peer, url string) (int, error) {
	var dest string
	switch {
	case (peer == "") == (url == ""):
		return 0, wire.Errorf(wire.CodeInvalidParams, "give peer or url (one of them)")
	case peer != "":
		dest = outbox.PeerDest(peer)
	default:
		dest = outbox.URLDest(url)
	}
	var k int
	err := a.n.db.Update(ctx, func(tx *store.Tx) error {
		var err error
		k, err = outbox.ReviveDest(tx, dest, false, a.n.clock.Now().UTC(), maxRevive)
		return err
	})
	if err != nil {
		return 0, wire.Errorf(wire.CodeSysStorage, "retry dead letters: %v", err)
	}
	a.n.out.poke(dest, true)
	return k, nil
}

// Drop deletes a queued or dead message for good.
func (a *OutboxAdmin) Drop(ctx context.Context, id string) error {
	err := a.n.db.Update(ctx, func(tx *store.Tx) error { return outbox.Drop(tx, id) })
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no outbox message %q", id).With("id", id)
	}
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "drop outbox message: %v", err)
	}
	return nil
}
