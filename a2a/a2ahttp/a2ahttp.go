// Package a2ahttp serves the A2A JSON-RPC 2.0 binding over HTTP (see
// package a2a for the mapping, package a2a/a2asrv for the methods): POST
// /a2a (Path) takes one JSON-RPC request per HTTP request, with the bearer
// token of every route (tasks:read; tasks:write for the methods that
// change something); batches (a JSON array) are refused with -32600.
// Answers are HTTP 200 with a JSON-RPC response, or an SSE stream for
// SendStreamingMessage and SubscribeToTask (stream.go; an error before the
// stream starts is the stream's one event, as the reference server answers
// it). GET /.well-known/agent-card.json (CardPath, public) is the Agent
// Card (card.go).
//
// Authentication failures are HTTP 401/403 and a rate limit HTTP 429 with
// Retry-After, as on every route, but with a JSON-RPC error body (-31401,
// -31403, -32603 RATE_LIMITED) that the SDKs decode. SendMessage honours
// an Idempotency-Key header as every creating route does (see
// idemRequest). Push notification configs are delivered as A2A events
// by the agent (agent/a2a_push.go, queued and sent by the peer network).
//
// The HTTP server (package httpapi) mounts the binding: its router hands
// the two paths to Handler.Serve and lends it, through Host, what every
// route shares: the token check, the body limits and budget, and the
// take-over of the connection for streams (shutdown, revoked tokens). An
// error Serve returns is answered by the server as a TPError.
package a2ahttp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/a2a/a2asrv"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/wire"
)

// The binding's paths, outside the API prefix.
const (
	Path     = "/a2a"
	CardPath = "/.well-known/agent-card.json"
)

// Host is what the HTTP server lends the binding, so that /a2a answers
// under the same rules as every route.
type Host interface {
	// Authorize checks the request's bearer token and that it has scope;
	// the error is the refusal's TPError (unauthorized, permission
	// denied, rate limited).
	Authorize(ctx *fasthttp.RequestCtx, scope auth.Scope) (auth.Principal, error)
	// ReadBody reads the request body within the route's limit and the
	// server's body budget; release gives the budget back once the
	// request is answered.
	ReadBody(ctx *fasthttp.RequestCtx) (release func(), err error)
	// TakeOver answers on the raw connection: header (sse.Header) first,
	// then fn writes the body until it returns or done is closed (the
	// server shuts down, the request's token is revoked).
	TakeOver(ctx *fasthttp.RequestCtx, header string, fn func(w *sse.Writer, done <-chan struct{}) error)
}

// Handler serves the binding for one agent.
type Handler struct {
	a       *agent.Agent
	srv     *a2asrv.Server
	host    Host
	version string
}

// New returns the binding of a (opened) agent, served through host;
// version is the agent card's.
func New(a *agent.Agent, host Host, version string) *Handler {
	return &Handler{a: a, srv: a2asrv.New(a), host: host, version: version}
}

// Serves reports whether path is one of the binding's.
func Serves(path string) bool { return path == Path || path == CardPath }

// Serve answers a request to one of the binding's paths.
func (h *Handler) Serve(ctx *fasthttp.RequestCtx, path string) error {
	method := string(ctx.Method())
	if path == CardPath {
		if method != fasthttp.MethodGet && method != fasthttp.MethodHead {
			return wire.Errorf(wire.CodeMethodNotAllowed, "%s is not allowed on %s", method, path)
		}
		return h.agentCard(ctx)
	}
	if method != fasthttp.MethodPost {
		return wire.Errorf(wire.CodeMethodNotAllowed, "%s is not allowed on %s", method, path)
	}
	p, err := h.host.Authorize(ctx, auth.ScopeTasksRead)
	if err != nil {
		// The HTTP status says it; the body is a JSON-RPC error so that
		// the SDKs, which read an error body as JSON-RPC, decode it.
		httpError(ctx, err, nil)
		return nil
	}
	release, err := h.host.ReadBody(ctx)
	if err != nil {
		return err
	}
	defer release()
	return h.rpc(ctx, p)
}

// answer writes the whole answer.
func answer(ctx *fasthttp.RequestCtx, status int, contentType string, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType(contentType)
	ctx.SetBody(body)
}

// httpError answers an authentication or authorization failure, or a
// rate limit: the TPError's HTTP status (401, 403, 429 with Retry-After),
// a JSON-RPC error body.
func httpError(ctx *fasthttp.RequestCtx, err error, id json.RawMessage) {
	we := wire.AsError(err)
	switch we.Code {
	case wire.CodeUnauthorized:
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="synapse"`)
	case wire.CodeRateLimited:
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	}
	b, _ := a2a.NewErrorResponse(id, a2a.ErrorFrom(err).WithDetails(time.Now())).Encode()
	answer(ctx, we.Status(), wire.ContentJSON, b)
}

// rateLimited reports whether r is the agent's rate_limited refusal.
func rateLimited(r *a2a.Response) bool {
	return r.Error != nil && r.Error.Agent != nil && r.Error.Agent.Code == wire.CodeRateLimited
}

// writeRPC answers r: HTTP 200, except a rate limit, which is HTTP 429
// with Retry-After, as on every route (the JSON-RPC error is the body).
func writeRPC(ctx *fasthttp.RequestCtx, r *a2a.Response) {
	if rateLimited(r) {
		httpError(ctx, r.Error.Agent, r.ID)
		return
	}
	if r.Error != nil {
		r.Error = r.Error.WithDetails(time.Now())
	}
	b, err := r.Encode()
	if err != nil {
		b, _ = a2a.NewErrorResponse(r.ID, a2a.Errorf(a2a.CodeInternal, "encode result: %v", err).WithDetails(time.Now())).Encode()
	}
	answer(ctx, fasthttp.StatusOK, wire.ContentJSON, b)
}

func (h *Handler) rpc(ctx *fasthttp.RequestCtx, p auth.Principal) error {
	body := bytes.TrimSpace(ctx.PostBody())
	if len(body) > 0 && body[0] == '[' {
		writeRPC(ctx, a2a.NewErrorResponse(nil, a2a.Errorf(a2a.CodeInvalidRequest, "batch requests are not supported")))
		return nil
	}
	var req a2a.Request
	if err := wire.CheckUTF8(body); err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(nil, a2a.Errorf(a2a.CodeParseError, "the body is not a JSON-RPC request: %v", err)))
		return nil
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(nil, a2a.Errorf(a2a.CodeParseError, "the body is not a JSON-RPC request: %v", err)))
		return nil
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.Errorf(a2a.CodeInvalidRequest, `a request needs "jsonrpc": "2.0" and a method`)))
		return nil
	}
	op, v, ok := a2a.Method(req.Method)
	if !ok {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.Errorf(a2a.CodeMethodNotFound, "method %q is not supported", req.Method)))
		return nil
	}
	if op.Writes() && !p.Can(auth.ScopeTasksWrite) {
		httpError(ctx, wire.Errorf(wire.CodePermissionDenied, "this token lacks the %q scope", auth.ScopeTasksWrite).
			With("scope", string(auth.ScopeTasksWrite)), req.ID)
		return nil
	}
	if op.Streaming() {
		if err := h.startStream(ctx, p, op, v, &req); err != nil {
			// As the reference server: a stream's error is an event of
			// the stream.
			streamError(ctx, a2a.NewErrorResponse(req.ID, a2a.ErrorFrom(err)))
		}
		return nil
	}
	var idem *agent.IdemRequest
	if key := ctx.Request.Header.Peek("Idempotency-Key"); len(key) > 0 && op == a2a.OpSend {
		idem = idemRequest(p, &req, string(key))
	}
	res, replayed, err := h.srv.Call(ctx, p, op, v, req.Params, idem)
	if err != nil {
		writeRPC(ctx, a2a.NewErrorResponse(req.ID, a2a.ErrorFrom(err)))
		return nil
	}
	if replayed {
		ctx.Response.Header.Set("Idempotent-Replayed", "true")
	}
	writeRPC(ctx, a2a.NewResponse(req.ID, res))
	return nil
}

// idemRequest names SendMessage with an Idempotency-Key header, under the
// rules of every route (agent/idempotency.go): the same key with the same
// method and params (the JSON-RPC id may differ) answers the stored
// result again, with Idempotent-Replayed: true, and creates no second
// task; with other params it is idempotency_key_reused; while the first is
// in flight, a conflict. A message for an existing task (taskId) does not
// create one: the key is not kept for it.
func idemRequest(p auth.Principal, req *a2a.Request, key string) *agent.IdemRequest {
	sum := sha256.New()
	sum.Write([]byte(req.Method))
	sum.Write([]byte{0})
	sum.Write(req.Params)
	return &agent.IdemRequest{Scope: p.ID, Key: key, Hash: hex.EncodeToString(sum.Sum(nil))}
}
