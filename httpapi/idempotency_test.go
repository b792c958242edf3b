package httpapi_test

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

func TestIdempotency(t *testing.T) {
	const body = `{"task_type":"echo","payload":{"x":1}}`

	t.Run("replay is byte-identical and runs once", func(t *testing.T) {
		ts := startServer(t)
		key := withHeader("Idempotency-Key", "key-1")
		first := ts.do(t, "POST", api("/task"), []byte(body), key)
		first.wantStatus(t, http.StatusCreated)
		if h := first.header.Get("Idempotent-Replayed"); h != "" {
			t.Errorf("first answer has Idempotent-Replayed: %q", h)
		}
		for i := 0; i < 3; i++ {
			again := ts.do(t, "POST", api("/task"), []byte(body), key)
			again.wantStatus(t, http.StatusCreated)
			if !bytes.Equal(again.body, first.body) {
				t.Errorf("replay body = %s, want %s", again.body, first.body)
			}
			if h := again.header.Get("Idempotent-Replayed"); h != "true" {
				t.Errorf("Idempotent-Replayed = %q, want true", h)
			}
			if a, b := again.header.Get("Location"), first.header.Get("Location"); a != b {
				t.Errorf("replay Location = %q, want %q", a, b)
			}
		}
		id := first.object(t)["task_id"].(string)
		if got := ts.listIDs(t, ""); !slices.Equal(got, []string{id}) {
			t.Errorf("tasks = %v, want only %s", got, id)
		}
	})

	t.Run("key in the body", func(t *testing.T) {
		ts := startServer(t)
		b := []byte(`{"task_type":"echo","payload":{},"idempotency_key":"body-key"}`)
		first := ts.do(t, "POST", api("/task"), b)
		first.wantStatus(t, http.StatusCreated)
		again := ts.do(t, "POST", api("/task"), b)
		again.wantStatus(t, http.StatusCreated)
		if !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay = %s (replayed %q), want %s (true)", again.body, again.header.Get("Idempotent-Replayed"), first.body)
		}
		if got := ts.listIDs(t, ""); len(got) != 1 {
			t.Errorf("tasks = %v, want one", got)
		}
	})

	t.Run("same key with another body", func(t *testing.T) {
		ts := startServer(t)
		key := withHeader("Idempotency-Key", "key-2")
		ts.do(t, "POST", api("/task"), []byte(body), key).wantStatus(t, http.StatusCreated)
		other := `{"task_type":"echo","payload":{"x":2}}`
		e := ts.do(t, "POST", api("/task"), []byte(other), key).wantError(t, http.StatusUnprocessableEntity, wire.CodeIdempotencyMismatch)
		if d, _ := e["details"].(map[string]any); d["idempotency_key"] != "key-2" {
			t.Errorf("details = %v, want idempotency_key key-2", e["details"])
		}
		if got := ts.listIDs(t, ""); len(got) != 1 {
			t.Errorf("tasks = %v, want one", got)
		}
	})

	t.Run("keys are scoped per token", func(t *testing.T) {
		ts := startServer(t)
		tok := createToken(t, ts, "writer", "tasks:write")
		key := withHeader("Idempotency-Key", "shared")
		a := ts.do(t, "POST", api("/task"), []byte(body), key)
		a.wantStatus(t, http.StatusCreated)
		b := ts.do(t, "POST", api("/task"), []byte(body), key, withToken(tok))
		b.wantStatus(t, http.StatusCreated)
		if b.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("another token's request was replayed")
		}
		ida, idb := a.object(t)["task_id"], b.object(t)["task_id"]
		if ida == idb {
			t.Errorf("both tokens got task %v, want two tasks", ida)
		}
		// each token still replays its own
		again := ts.do(t, "POST", api("/task"), []byte(body), key, withToken(tok))
		if !bytes.Equal(again.body, b.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("second token's replay = %s, want %s", again.body, b.body)
		}
		if got := ts.listIDs(t, ""); len(got) != 2 {
			t.Errorf("tasks = %v, want two", got)
		}
	})

	t.Run("replay survives a restart", func(t *testing.T) {
		ts := startServer(t)
		key := withHeader("Idempotency-Key", "durable")
		first := ts.do(t, "POST", api("/task"), []byte(body), key)
		first.wantStatus(t, http.StatusCreated)
		ts.restart()
		again := ts.do(t, "POST", api("/task"), []byte(body), key)
		again.wantStatus(t, http.StatusCreated)
		if !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay after restart = %s (replayed %q), want %s", again.body, again.header.Get("Idempotent-Replayed"), first.body)
		}
		if got := ts.listIDs(t, ""); len(got) != 1 {
			t.Errorf("tasks = %v, want one", got)
		}
	})

	t.Run("in flight, then the sync answer is replayed", func(t *testing.T) {
		ts := startServer(t)
		sleep := []byte(`{"task_type":"sleep","payload":{"ms":60000}}`)
		key := withHeader("Idempotency-Key", "slow")
		type result struct {
			r   *reply
			err error
		}
		firstDone := make(chan result, 1)
		go func() {
			r, err := ts.try("POST", api("/task?wait=30"), sleep, key)
			firstDone <- result{r, err}
		}()
		var id string
		testutil.Eventually(t, pollTimeout, "the first request's task to exist", func() bool {
			ids := ts.listIDs(t, "task_type=sleep")
			if len(ids) == 1 {
				id = ids[0]
			}
			return id != ""
		})
		for _, b := range [][]byte{sleep, []byte(`{"task_type":"sleep","payload":{"ms":1}}`)} {
			ts.do(t, "POST", api("/task?wait=30"), b, key).wantError(t, http.StatusConflict, wire.CodeIdempotencyInFlight)
		}
		ts.cancelTask(t, id)
		res := <-firstDone
		if res.err != nil {
			t.Fatalf("first request: %v", res.err)
		}
		res.r.wantStatus(t, http.StatusOK)
		if got := res.r.object(t)["status"]; got != "cancelled" {
			t.Errorf("first answer status = %v, want cancelled", got)
		}
		again := ts.do(t, "POST", api("/task?wait=30"), sleep, key)
		again.wantStatus(t, http.StatusOK)
		if !bytes.Equal(again.body, res.r.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay = %s (replayed %q), want %s", again.body, again.header.Get("Idempotent-Replayed"), res.r.body)
		}
		if got := ts.listIDs(t, ""); !slices.Equal(got, []string{id}) {
			t.Errorf("tasks = %v, want only %s", got, id)
		}
	})

	t.Run("refused requests are not stored", func(t *testing.T) {
		ts := startServer(t)
		key := withHeader("Idempotency-Key", "retry-me")
		ts.do(t, "POST", api("/task"), []byte(`{"task_type":"echo","payload":[]}`), key).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		ts.do(t, "POST", api("/task"), []byte(body), key).wantStatus(t, http.StatusCreated)
	})

	t.Run("invalid keys", func(t *testing.T) {
		ts := startServer(t)
		for name, opt := range map[string]reqOpt{
			"tab in header":   withHeader("Idempotency-Key", "bad\tkey"),
			"non-ASCII byte":  withHeader("Idempotency-Key", "bad\xffkey"),
			"300 byte header": withHeader("Idempotency-Key", strings.Repeat("k", 300)),
		} {
			t.Run(name, func(t *testing.T) {
				e := ts.do(t, "POST", api("/task"), []byte(body), opt).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
				if d, _ := e["details"].(map[string]any); d["field"] != "idempotency_key" {
					t.Errorf("details = %v, want field idempotency_key", e["details"])
				}
			})
		}
		t.Run("control character in body field", func(t *testing.T) {
			ts.do(t, "POST", api("/task"), []byte(`{"task_type":"echo","idempotency_key":"a\u0001b"}`)).
				wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		})
		if got := ts.listIDs(t, ""); len(got) != 0 {
			t.Errorf("tasks = %v, want none", got)
		}
	})
}
