package httpapi

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/a2a/a2ahttp"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// Request bodies are read only after the route is known and its bearer
// token checked: the server streams bodies (fasthttp reads at most 8 KiB
// with the headers), and readBody reads the rest once the request may
// have it. A client without a valid token costs its connection buffers
// whatever Content-Length it declares.
//
// Each route class has its own limit (multipart uploads, tier-1 batches,
// everything else: http.max_body_bytes), checked against Content-Length
// before a byte is read and against the bytes actually read for chunked
// bodies. All bodies being read or handled share one budget
// (http.max_inflight_body_bytes); routes without a token (signed P2P
// envelopes) may use a quarter of it, so that they cannot starve the rest.
// A request that finds the budget spent waits up to budgetWait, then gets
// 503 TP-SYS001 with Retry-After.

// budgetWait bounds how long a request waits for body budget.
const budgetWait = 5 * time.Second

// budget is a counting semaphore of bytes.
type budget struct {
	mu   sync.Mutex
	max  int64
	used int64
	// freed is closed and replaced whenever bytes are released.
	freed chan struct{}
}

func newBudget(max int64) *budget { return &budget{max: max, freed: make(chan struct{})} }

// acquire takes n bytes, waiting until deadline; false when they did not
// become free. A request larger than the whole budget takes all of it.
func (b *budget) acquire(n int64, deadline time.Time) bool {
	n = min(n, b.max)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		if b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-freed:
		case <-timer.C:
			return false
		}
	}
}

func (b *budget) release(n int64) {
	n = min(n, b.max)
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the number of bytes taken (metrics).
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// bodyLimit is the body limit of a request to path with method.
func (s *Server) bodyLimit(path string) int {
	cfg := s.a.Config()
	switch path {
	case wire.APIPrefix + "/task/multipart":
		return int(cfg.MaxFileSize) + 1<<20
	}
	if len(path) > len(wire.APIPrefix)+7 && path[:len(wire.APIPrefix)+7] == wire.APIPrefix+"/tier1/" && s.t1 != nil {
		return s.t1.Config().MaxBatchBytes
	}
	return s.limits.MaxBodyBytes
}

// readBody reads the request body after the request was authorized (or
// its route needs no token: public). It returns a function that releases
// the body's budget once the handler is done with it.
func (s *Server) readBody(ctx *fasthttp.RequestCtx, public bool) (release func(), err error) {
	noop := func() {}
	limit := s.bodyLimit(string(ctx.Path()))
	stream := ctx.RequestBodyStream()
	if stream == nil {
		if len(ctx.Request.Body()) > limit {
			return noop, tooLarge(limit)
		}
		return noop, nil
	}
	cl := ctx.Request.Header.ContentLength()
	if cl > limit {
		ctx.SetConnectionClose()
		return noop, tooLarge(limit)
	}
	if cl == 0 {
		return noop, nil
	}
	want := int64(cl)
	if cl < 0 { // chunked: as much as the limit allows
		want = int64(limit)
	}
	b := s.bodies
	if public {
		b = s.publicBodies
	}
	if !b.acquire(want, time.Now().Add(budgetWait)) {
		ctx.SetConnectionClose()
		return noop, wire.Errorf(wire.CodeSysOverloaded, "too many request bodies in flight; retry later").
			With("retry_after_seconds", 1)
	}
	release = func() { b.release(want) }
	var body []byte
	if cl > 0 {
		body = make([]byte, cl)
		_, err = io.ReadFull(stream, body)
	} else {
		body, err = io.ReadAll(io.LimitReader(stream, int64(limit)+1))
		if err == nil && len(body) > limit {
			ctx.SetConnectionClose()
			release()
			return noop, tooLarge(limit)
		}
	}
	if err != nil {
		release()
		ctx.SetConnectionClose()
		if isTimeout(err) {
			return noop, wire.Errorf(wire.CodeRequestTimeout, "the request body did not arrive within the read timeout")
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return noop, wire.Errorf(wire.CodeMessageFormatInvalid, "the request body ends before its Content-Length")
		}
		return noop, wire.Errorf(wire.CodeMessageFormatInvalid, "the request body could not be read")
	}
	ctx.Request.SetBodyRaw(body)
	return release, nil
}

func tooLarge(limit int) error {
	return wire.Errorf(wire.CodePayloadTooLarge, "the request body is larger than the limit of %d bytes for this route", limit).
		With("limit_bytes", limit)
}

// expect answers "Expect: 100-continue" (curl sends it for bodies over 1
// MiB): the token, the scope and the declared length are checked before
// the client is told to send the body; a refusal is the usual TPError and
// the body is never sent.
func (s *Server) expect(ctx *fasthttp.RequestCtx) int {
	path := string(ctx.Path())
	var err error
	if scope := s.routeScope(path, string(ctx.Method())); scope != "" {
		_, err = s.authorize(ctx, scope)
	}
	if limit := s.bodyLimit(path); err == nil && ctx.Request.Header.ContentLength() > limit {
		err = tooLarge(limit)
	}
	if err != nil {
		writeError(ctx, err)
		s.requests.With(statusLabel(ctx.Response.StatusCode())).Add(1)
		return ctx.Response.StatusCode()
	}
	return fasthttp.StatusContinue
}

// headerReceived runs once a request's headers are read, before any of
// its body. A request whose Content-Length is over its route's limit is
// answered now (401, 403 or 413, by expect) instead of once its first body
// byte arrives, which a client that waits for an answer before sending
// never sends (it was held for the read timeout and answered 408): it is
// marked "Expect: 100-continue", so fasthttp reads no body and asks expect,
// which refuses it and closes the connection. Only a plain path is judged
// here; any other (escapes, dot segments) is judged by readBody.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	cfg := fasthttp.RequestConfig{MaxRequestBodySize: 1}
	cl := h.ContentLength()
	if cl <= 0 || len(h.Peek(fasthttp.HeaderExpect)) > 0 {
		return cfg
	}
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	if bytes.ContainsAny(path, "%\\") || bytes.Contains(path, []byte("//")) || bytes.Contains(path, []byte("/.")) {
		return cfg
	}
	if cl > s.bodyLimit(string(path)) {
		h.Set(fasthttp.HeaderExpect, "100-continue")
	}
	return cfg
}

// routeScope is the scope the route of method and path needs; "" for
// public routes and paths no route serves (the handler answers those).
func (s *Server) routeScope(path, method string) auth.Scope {
	if path == a2ahttp.Path {
		return auth.ScopeTasksRead
	}
	rest, ok := strings.CutPrefix(path, wire.APIPrefix+"/")
	if !ok {
		return ""
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	for _, r := range s.table {
		if _, ok := match(r.pattern, parts); ok && r.method == method {
			return r.scope
		}
	}
	return ""
}
