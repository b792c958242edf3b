package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent/idemdb"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Idempotency keys (SPEC §5.3, the IETF httpapi draft), the same for every
// API (REST, gRPC, ...): a request made with a key is answered once; the
// same key and the same request later get the stored answer again, byte
// for byte; the same key with another request is idempotency_key_reused
// (422); the same key while the first request is still being answered is
// idempotency_key_in_flight (409, retriable). Keys are scoped to the
// caller's identity and kept IdempotencyTTL in the store, across restarts.
// Only successful answers are stored: a refused request (400, 429, ...)
// can be retried with its key.
//
// The API layer says what "the same request" is (IdemRequest.Hash: a
// fingerprint of what it decoded); the agent does the rest. A submit
// (Submit with SubmitOptions.Idempotency) stores its domain answer, the
// task as the request was answered, in the task's own transaction, and a
// replay gives the API that task to render again as it rendered the
// first answer: no HTTP status or body bytes are stored for it, and
// nothing is encoded on the store's writer (idemrecords.go). The other
// creating routes (Idempotent) still store their answer as sent
// (IdemAnswer), as do submits' records written before; those replay as
// they are until they expire.

// IdemRequest is a request made with an idempotency key.
type IdemRequest struct {
	// Scope is whose key it is: the caller's token id.
	Scope string
	// Key is the idempotency key the caller chose.
	Key string
	// Hash fingerprints the request: two requests are the same when their
	// hashes are.
	Hash string
}

// IdemAnswer is an answer kept as it was sent, replayed as it is: the
// answer of a creating route other than a submit (Idempotent), or of a
// submit stored before its records held the task (until they expire).
type IdemAnswer struct {
	Status      int
	ContentType string
	Body        []byte
	// TaskID is the task the request created, if it created one.
	TaskID string
}

// idemClaim is held by the one request being answered under a key, from
// claim until release.
type idemClaim struct {
	a    *Agent
	req  IdemRequest
	once sync.Once
}

// claim begins a request made with an idempotency key. It checks the
// key, then:
//   - another request with the key is being answered:
//     idempotency_key_in_flight;
//   - an answer is stored for the same request: that answer, and no claim;
//   - an answer is stored for another request: idempotency_key_reused;
//   - otherwise a claim on the key: the caller answers the request, stores
//     the answer (with the task, or idemClaim.store), and releases the
//     claim.
//
// A record older than IdempotencyTTL counts as none; it is deleted here
// so that the key can be stored again.
func (a *Agent) claim(ctx context.Context, r IdemRequest) (*idemClaim, *idemAnswer, error) {
	if err := idemdb.CheckKey(r.Key); err != nil {
		return nil, nil, err
	}
	if !a.idem.Begin(r.Scope, r.Key) {
		return nil, nil, wire.Errorf(wire.CodeIdempotencyInFlight, "").With("idempotency_key", r.Key)
	}
	c := &idemClaim{a: a, req: r}
	ans, err := c.stored(ctx)
	if ans != nil || err != nil {
		c.release()
		return nil, ans, err
	}
	return c, nil, nil
}

// release ends the claim: the key may be used again. It is safe to call
// more than once.
func (c *idemClaim) release() {
	c.once.Do(func() { c.a.idem.End(c.req.Scope, c.req.Key) })
}

// stored reads the answer stored for the claim's key: nil when there is
// none (or only an expired one, which it deletes), idempotency_key_reused
// when it answered another request.
func (c *idemClaim) stored(ctx context.Context) (*idemAnswer, error) {
	a, r := c.a, c.req
	var rec *idemdb.Record
	// A keyed retry after commit_outcome_unknown comes while the store
	// may still be reopening its file: it waits for the file's answer.
	settled(a.db)
	err := viewSettled(a.db, func(tx *store.Tx) (err error) {
		rec, err = idemdb.Get(tx, r.Scope, r.Key)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "read idempotency record: %v", err)
	}
	if now := a.clock.Now(); now.Sub(rec.CreatedAt) > IdempotencyTTL {
		// Expired: retention deletes it within a minute, but the task
		// write refuses a key that has a record, so delete it now.
		err := a.db.Update(ctx, func(tx *store.Tx) error {
			_, err := idemdb.Prune(tx, now.Add(-IdempotencyTTL), pruneBatch)
			return err
		})
		if err != nil {
			return nil, wire.Errorf(wire.CodeSysStorage, "delete an expired idempotency record: %v", err)
		}
		return nil, nil
	}
	if rec.RequestHash != r.Hash {
		return nil, wire.Errorf(wire.CodeIdempotencyMismatch, "").With("idempotency_key", r.Key)
	}
	return answerOf(rec), nil
}

// store stores rec (its hash set here, its creation time when it has
// none) as the answer
// of the claim's request, or replaces the answer stored before (the
// record keeps its creation time). The record is encoded before the
// write.
func (c *idemClaim) store(ctx context.Context, rec idemdb.Record) error {
	r := c.req
	rec.RequestHash = r.Hash
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = c.a.clock.Now()
	}
	raw, err := idemdb.Encode(&rec)
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "store idempotency record: %v", err)
	}
	err = c.a.db.Update(ctx, func(tx *store.Tx) error {
		old, err := idemdb.Get(tx, r.Scope, r.Key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return idemdb.Put(tx, r.Scope, r.Key, rec.CreatedAt, raw)
		case err != nil:
			return err
		case !old.CreatedAt.Equal(rec.CreatedAt):
			// An overwrite keeps the first creation time, which the
			// expiry index holds: encoded again with it (rare: a sync
			// submit whose task became final after it was stored).
			rec.CreatedAt = old.CreatedAt
			if raw, err = idemdb.Encode(&rec); err != nil {
				return err
			}
		}
		return idemdb.Put(tx, r.Scope, r.Key, rec.CreatedAt, raw)
	})
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "store idempotency record: %v", err)
	}
	return nil
}

// write is the claim's record to store with the task, in the task's own
// transaction: the task as it is stored is the answer.
func (c *idemClaim) write() *idemWrite {
	return &idemWrite{scope: c.req.Scope, key: c.req.Key, hash: c.req.Hash}
}

// idemWrite asks the task's write to store an idempotency record in the
// same transaction, with the task as it is stored as the answer.
type idemWrite struct {
	scope, key, hash string
	// stored is the task as the write stored it with the key.
	stored *wire.Task
}

// record encodes the record of t for the task's write, before it, and
// keeps the answer: t as a replay reads it back, so that the first
// answer and its replays are rendered from the same task.
func (w *idemWrite) record(t *wire.Task) ([]byte, error) {
	raw, err := idemdb.Encode(&idemdb.Record{RequestHash: w.hash, TaskID: t.ID, CreatedAt: t.CreatedAt, Task: idemdb.Snapshot(t)})
	if err != nil {
		return nil, err
	}
	var back idemdb.Record
	if err := json.Unmarshal(raw, &back); err != nil || back.Task == nil {
		return nil, fmt.Errorf("idempotency record of task %s does not read back: %v", t.ID, err)
	}
	w.stored = back.Task.Answered()
	return raw, nil
}

// Idempotent answers a request made with an idempotency key: the first
// time by running fn and storing its answer (in a transaction of its own,
// after fn succeeded; a failure to store is logged and the answer still
// given), later by the stored answer (replayed is true). An error of fn
// stores nothing. It serves the creating routes other than a submit
// (Submit takes its key in SubmitOptions).
func (a *Agent) Idempotent(ctx context.Context, r IdemRequest, fn func() (*IdemAnswer, error)) (ans *IdemAnswer, replayed bool, err error) {
	c, stored, err := a.claim(ctx, r)
	if c == nil {
		if err != nil {
			return nil, false, err
		}
		if stored.sent == nil {
			// A submit's key given to another route: not the same request.
			return nil, false, wire.Errorf(wire.CodeIdempotencyMismatch, "").With("idempotency_key", r.Key)
		}
		return stored.sent, true, nil
	}
	defer c.release()
	ans, err = fn()
	if err != nil {
		return nil, false, err
	}
	if err := c.store(ctx, idemdb.Record{Status: ans.Status, ContentType: ans.ContentType, Body: ans.Body, TaskID: ans.TaskID}); err != nil {
		a.log.Warn("store idempotency record", "err", err)
	}
	return ans, false, nil
}

// IdempotentTask is the id of the task stored under (scope, key), "" when
// none is.
func (a *Agent) IdempotentTask(scope, key string) string {
	id := ""
	_ = a.db.View(func(tx *store.Tx) error {
		if r, err := idemdb.Get(tx, scope, key); err == nil {
			id = r.TaskID
		}
		return nil
	})
	return id
}

// submitIdempotent is Submit under an idempotency key: the task is
// stored with its record in one transaction, so the two exist together
// or not at all. When the task was stored before it was final and the
// sync mode's wait returns it final, the record's task is replaced by the
// final one: a replay answers what the first request was answered (or,
// when that replacement fails, the task stored with the key).
func (a *Agent) submitIdempotent(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, r IdemRequest, wait time.Duration) (*Submitted, error) {
	c, stored, err := a.claim(ctx, r)
	if c == nil {
		if err != nil {
			return nil, err
		}
		return replay(stored), nil
	}
	defer c.release()
	w := c.write()
	t, err := a.eng.submitWith(ctx, p, req, w, wait)
	if errors.Is(err, errIdemRace) {
		// Stored meanwhile by a write that did not claim the key:
		// answer as it was answered.
		stored, err = c.stored(ctx)
		if err == nil && stored == nil {
			err = wire.Errorf(wire.CodeSysStorage, "the idempotency record of key %q vanished", r.Key)
		}
		if err != nil {
			return nil, err
		}
		return replay(stored), nil
	}
	if err != nil {
		return nil, err
	}
	answered := w.stored
	if wait > 0 && t.Status.Terminal() && !answered.Status.Terminal() {
		if answered, err = readBack(t); err != nil {
			answered = t
		}
		if err := c.store(ctx, idemdb.Record{TaskID: t.ID, CreatedAt: t.CreatedAt, Task: idemdb.Snapshot(t)}); err != nil {
			// The task is stored final, so the answer is true: refusing
			// it would tell a stored task not stored. A keyed replay
			// answers the task stored with the key (issue #28).
			a.log.Warn("store idempotency record", "err", err)
		}
	}
	return &Submitted{Task: answered}, nil
}

// readBack is t as a replay of its record reads it back.
func readBack(t *wire.Task) (*wire.Task, error) {
	raw, err := json.Marshal(idemdb.Snapshot(t))
	if err != nil {
		return nil, err
	}
	var s idemdb.Task
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Answered(), nil
}

// replay is the Submitted of a stored answer.
func replay(ans *idemAnswer) *Submitted {
	return &Submitted{Task: ans.task, Sent: ans.sent, Replayed: true}
}
