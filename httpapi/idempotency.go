package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Idempotency keys follow the IETF httpapi draft (SPEC §5.3): the same key
// and request replay the stored answer byte for byte with
// Idempotent-Replayed: true; the same key with another request is 422; the
// same key while the first request is in flight is 409. Keys are scoped to
// the caller's token and kept 24 h in the store. Only successful answers are
// stored: a refused request (400, 429, ...) can be retried with its key.

const maxIdemKey = 255

func checkIdemKey(k string) error {
	if len(k) > maxIdemKey {
		return wire.Errorf(wire.CodeInvalidParams, "Idempotency-Key is longer than %d bytes", maxIdemKey).With("field", "idempotency_key")
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return wire.Errorf(wire.CodeInvalidParams, "Idempotency-Key must be printable ASCII").With("field", "idempotency_key")
		}
	}
	return nil
}

// requestHash fingerprints what makes two requests "the same": method, path
// with query, content type, accepted type and body.
func requestHash(ctx *fasthttp.RequestCtx) string {
	h := sha256.New()
	for _, part := range [][]byte{ctx.Method(), ctx.RequestURI(), ctx.Request.Header.ContentType(),
		ctx.Request.Header.Peek(fasthttp.HeaderAccept), ctx.PostBody()} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// replay answers from a stored record; done reports that it did (or that
// the key conflicts).
func (s *Server) replay(ctx *fasthttp.RequestCtx, scope, key, hash string) (done bool, err error) {
	var rec *store.IdemRecord
	err = s.a.Store().View(func(tx *store.Tx) error {
		var err error
		rec, err = tx.Idem(scope, key)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, wire.Errorf(wire.CodeSysStorage, "read idempotency record: %v", err)
	}
	if time.Since(rec.CreatedAt) > agent.IdempotencyTTL {
		return false, nil // expired; retention deletes it soon
	}
	if rec.RequestHash != hash {
		return true, wire.Errorf(wire.CodeIdempotencyMismatch, "").With("idempotency_key", key)
	}
	ctx.Response.Header.Set("Idempotent-Replayed", "true")
	if rec.TaskID != "" {
		ctx.Response.Header.Set(fasthttp.HeaderLocation, Prefix+"/task/"+rec.TaskID)
	}
	writeRaw(ctx, rec.Status, rec.ContentType, rec.Body)
	return true, nil
}

// storeIdem replaces the stored answer (the sync mode's final answer).
func (s *Server) storeIdem(ctx context.Context, w *agent.IdemWrite, taskID string, status int, ct string, body []byte) error {
	err := s.a.Store().Update(ctx, func(tx *store.Tx) error {
		rec, err := tx.Idem(w.Scope, w.Key)
		if err != nil {
			return err
		}
		rec.Status, rec.ContentType, rec.Body, rec.TaskID = status, ct, body, taskID
		return tx.PutIdem(w.Scope, w.Key, rec)
	})
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "store idempotency record: %v", err)
	}
	return nil
}

// inflight tracks keys whose first request is still being answered.
type inflight struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (f *inflight) begin(scope, key string) bool {
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

func (f *inflight) end(scope, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, scope+"\x00"+key)
}
