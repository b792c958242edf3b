package outbox

import (
	"context"
	"errors"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Administration of the queue: list, retry, drop (the admin routes
// GET /outbox, POST /outbox/{id}/retry, POST /outbox/retry, DELETE
// /outbox/{id}). Errors are *wire.Error with the code a client sees.

// Entry is an outbox item as the API lists it.
type Entry struct {
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

func entry(it *Item, s State) Entry {
	e := Entry{ID: it.ID, State: string(s), Peer: it.Peer, URL: it.URL, Type: it.Type,
		CorrelationID: it.CorrelationID, Attempts: it.Attempts, LastError: it.LastError,
		CreatedAt: wire.FormatTime(it.CreatedAt)}
	if s == Pending {
		e.NextAttemptAt = wire.FormatTime(it.NextAttempt)
	} else if !it.DeadAt.IsZero() {
		e.DeadAt = wire.FormatTime(it.DeadAt)
	}
	return e
}

// Query selects outbox items.
type Query struct {
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
func (o *Queue) List(q Query) ([]Entry, string, error) {
	state := Pending
	switch q.State {
	case "", string(Pending):
	case string(Dead):
		state = Dead
	default:
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "state must be pending or dead").With("field", "state")
	}
	f := Filter{State: state, After: q.After, Limit: q.Limit}
	switch {
	case q.Peer != "" && q.URL != "":
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "give peer or url, not both")
	case q.Peer != "":
		f.Dest = PeerDest(q.Peer)
	case q.URL != "":
		f.Dest = URLDest(q.URL)
	}
	var items []*Item
	var next string
	err := o.db.View(func(tx *store.Tx) error {
		var err error
		items, next, err = List(tx, f)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", wire.Errorf(wire.CodeInvalidParams, "page_token is not one this agent gave (or that item left the list)").With("field", "page_token")
	}
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeSysStorage, "list outbox: %v", err)
	}
	out := make([]Entry, len(items))
	for i, it := range items {
		out[i] = entry(it, state)
	}
	return out, next, nil
}

// Retry requeues a dead letter (at its original place, attempts reset)
// or makes a pending message due now.
func (o *Queue) Retry(ctx context.Context, id string) (*Entry, error) {
	var it *Item
	err := o.db.Update(ctx, func(tx *store.Tx) error {
		cur, state, err := Get(tx, id)
		if err != nil {
			return err
		}
		if state == Pending {
			it = cur
			return nil
		}
		it, err = Revive(tx, id, o.clock.Now().UTC())
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "no outbox message %q", id).With("id", id)
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "retry outbox message: %v", err)
	}
	o.Poke(it.Dest(), true)
	e := entry(it, Pending)
	return &e, nil
}

// RetryDeadLetters requeues every dead letter of a peer (or, with url set
// instead, of a webhook URL) in their original order; it returns how many.
func (o *Queue) RetryDeadLetters(ctx context.Context, peer, url string) (int, error) {
	var dest string
	switch {
	case (peer == "") == (url == ""):
		return 0, wire.Errorf(wire.CodeInvalidParams, "give peer or url (one of them)")
	case peer != "":
		dest = PeerDest(peer)
	default:
		dest = URLDest(url)
	}
	var k int
	err := o.db.Update(ctx, func(tx *store.Tx) error {
		var err error
		k, err = ReviveDest(tx, dest, false, o.clock.Now().UTC(), maxRevive)
		return err
	})
	if err != nil {
		return 0, wire.Errorf(wire.CodeSysStorage, "retry dead letters: %v", err)
	}
	o.Poke(dest, true)
	return k, nil
}

// Drop deletes a queued or dead message for good.
func (o *Queue) Drop(ctx context.Context, id string) error {
	err := o.db.Update(ctx, func(tx *store.Tx) error { return Drop(tx, id) })
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no outbox message %q", id).With("id", id)
	}
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "drop outbox message: %v", err)
	}
	return nil
}
