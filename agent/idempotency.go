package agent

import (
	"context"
	"errors"
	"sync"
	"time"

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
// fingerprint of what it decoded) and what its answer looks like
// (IdemAnswer: status, content type and body as it sends them); the agent
// does the rest: ClaimIdempotency for the checks, Idempotent for an
// operation whose answer is stored after it succeeded, SubmitIdempotent
// for a task whose answer is stored with it.

// MaxIdempotencyKey bounds the length of an idempotency key, in bytes.
const MaxIdempotencyKey = 255

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

// IdemAnswer is the stored answer of a request, replayed as it is.
type IdemAnswer struct {
	Status      int
	ContentType string
	Body        []byte
	// TaskID is the task the request created, if it created one.
	TaskID string
}

// CheckIdempotencyKey refuses a key longer than MaxIdempotencyKey bytes or
// with a byte that is not printable ASCII (invalid_params, field
// idempotency_key).
func CheckIdempotencyKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return wire.Errorf(wire.CodeInvalidParams, "the idempotency key is longer than %d bytes", MaxIdempotencyKey).With("field", "idempotency_key")
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return wire.Errorf(wire.CodeInvalidParams, "the idempotency key must be printable ASCII").With("field", "idempotency_key")
		}
	}
	return nil
}

// IdemClaim is held by the one request being answered under a key, from
// ClaimIdempotency until Release.
type IdemClaim struct {
	a    *Agent
	req  IdemRequest
	once sync.Once
}

// ClaimIdempotency begins a request made with an idempotency key. It
// checks the key, then:
//   - another request with the key is being answered:
//     idempotency_key_in_flight;
//   - an answer is stored for the same request: that answer, and no claim;
//   - an answer is stored for another request: idempotency_key_reused;
//   - otherwise a claim on the key: the caller answers the request, stores
//     the answer (IdemClaim.Store, or IdemClaim.TaskWrite with a task),
//     and releases the claim.
//
// A record older than IdempotencyTTL counts as none; it is deleted here
// so that the key can be stored again.
func (a *Agent) ClaimIdempotency(ctx context.Context, r IdemRequest) (*IdemClaim, *IdemAnswer, error) {
	if err := CheckIdempotencyKey(r.Key); err != nil {
		return nil, nil, err
	}
	if !a.idem.begin(r.Scope, r.Key) {
		return nil, nil, wire.Errorf(wire.CodeIdempotencyInFlight, "").With("idempotency_key", r.Key)
	}
	c := &IdemClaim{a: a, req: r}
	ans, err := c.stored(ctx)
	if ans != nil || err != nil {
		c.Release()
		return nil, ans, err
	}
	return c, nil, nil
}

// Release ends the claim: the key may be used again. It is safe to call
// more than once.
func (c *IdemClaim) Release() {
	c.once.Do(func() { c.a.idem.end(c.req.Scope, c.req.Key) })
}

// stored reads the answer stored for the claim's key: nil when there is
// none (or only an expired one, which it deletes), idempotency_key_reused
// when it answered another request.
func (c *IdemClaim) stored(ctx context.Context) (*IdemAnswer, error) {
	a, r := c.a, c.req
	var rec *store.IdemRecord
	// A keyed retry after commit_outcome_unknown comes while the store
	// may still be reopening its file: it waits for the file's answer.
	settled(a.db)
	err := viewSettled(a.db, func(tx *store.Tx) (err error) {
		rec, err = tx.Idem(r.Scope, r.Key)
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
			_, err := tx.PruneIdem(now.Add(-IdempotencyTTL), pruneBatch)
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
	return &IdemAnswer{Status: rec.Status, ContentType: rec.ContentType, Body: rec.Body, TaskID: rec.TaskID}, nil
}

// Store stores ans as the answer of the claim's request, or replaces the
// answer stored before (the record keeps its creation time).
func (c *IdemClaim) Store(ctx context.Context, ans *IdemAnswer) error {
	r := c.req
	err := c.a.db.Update(ctx, func(tx *store.Tx) error {
		rec, err := tx.Idem(r.Scope, r.Key)
		if errors.Is(err, store.ErrNotFound) {
			rec, err = &store.IdemRecord{RequestHash: r.Hash, CreatedAt: c.a.clock.Now()}, nil
		}
		if err != nil {
			return err
		}
		rec.Status, rec.ContentType, rec.Body, rec.TaskID = ans.Status, ans.ContentType, ans.Body, ans.TaskID
		return tx.PutIdem(r.Scope, r.Key, rec)
	})
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "store idempotency record: %v", err)
	}
	return nil
}

// TaskWrite asks Submit to store the claim's answer in the task's own
// transaction: render makes it from the task as stored.
func (c *IdemClaim) TaskWrite(render func(t *wire.Task) *IdemAnswer) *IdemWrite {
	return &IdemWrite{Scope: c.req.Scope, Key: c.req.Key, RequestHash: c.req.Hash,
		Render: func(t *wire.Task) (int, string, []byte) {
			ans := render(t)
			return ans.Status, ans.ContentType, ans.Body
		}}
}

// Idempotent answers a request made with an idempotency key: the first
// time by running fn and storing its answer (in a transaction of its own,
// after fn succeeded; a failure to store is logged and the answer still
// given), later by the stored answer (replayed is true). An error of fn
// stores nothing.
func (a *Agent) Idempotent(ctx context.Context, r IdemRequest, fn func() (*IdemAnswer, error)) (ans *IdemAnswer, replayed bool, err error) {
	c, ans, err := a.ClaimIdempotency(ctx, r)
	if c == nil {
		return ans, ans != nil, err
	}
	defer c.Release()
	ans, err = fn()
	if err != nil {
		return nil, false, err
	}
	if err := c.Store(ctx, ans); err != nil {
		a.log.Warn("store idempotency record", "err", err)
	}
	return ans, false, nil
}

// SubmitIdempotent is Submit (wait 0) or SubmitWait under an idempotency
// key. render makes the request's answer from the task; it is stored in
// the task's transaction, so the task and its answer exist together or
// not at all. When the task was stored before it was final and SubmitWait
// returns it final, the stored answer is replaced by render's answer for
// the final task: a replay gives what the first request was answered
// (or, when that replacement fails, the answer stored with the task).
// ans is the answer to send; replayed is true when it is a stored one
// (t is then nil).
func (a *Agent) SubmitIdempotent(ctx context.Context, p auth.Principal, req *wire.SubmitRequest, r IdemRequest, wait time.Duration,
	render func(t *wire.Task) *IdemAnswer) (t *wire.Task, ans *IdemAnswer, replayed bool, err error) {
	c, ans, err := a.ClaimIdempotency(ctx, r)
	if c == nil {
		return nil, ans, ans != nil, err
	}
	defer c.Release()
	var renderedFinal bool
	w := c.TaskWrite(func(t *wire.Task) *IdemAnswer {
		ans = render(t)
		ans.TaskID = t.ID
		renderedFinal = t.Status.Terminal()
		return ans
	})
	if wait > 0 {
		t, err = a.SubmitWait(ctx, p, req, w, wait)
	} else {
		t, err = a.Submit(ctx, p, req, w)
	}
	if ErrIdemRace(err) {
		// Stored meanwhile by a request that did not claim the key (not
		// one of the APIs): answer as it was answered.
		ans, err = c.stored(ctx)
		if err == nil && ans == nil {
			err = wire.Errorf(wire.CodeSysStorage, "the idempotency record of key %q vanished", r.Key)
		}
		return nil, ans, err == nil, err
	}
	if err != nil {
		return nil, nil, false, err
	}
	if wait > 0 && t.Status.Terminal() && !renderedFinal {
		ans = render(t)
		ans.TaskID = t.ID
		if err := c.Store(ctx, ans); err != nil {
			// The task is stored final, so the answer is true: refusing
			// it would tell a stored task not stored. A keyed replay
			// gives the answer stored with the task (issue #28).
			a.log.Warn("store idempotency record", "err", err)
		}
	}
	return t, ans, false, nil
}

// idemFlights tracks the keys whose first request is being answered.
type idemFlights struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (f *idemFlights) begin(scope, key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]struct{}{}
	}
	k := scope + "\x00" + key
	if _, busy := f.m[k]; busy {
		return false
	}
	f.m[k] = struct{}{}
	return true
}

func (f *idemFlights) end(scope, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, scope+"\x00"+key)
}
