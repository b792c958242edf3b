package httpapi

import (
	"bytes"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/a2a/a2ahttp"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

type handlerFunc func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error

// route is one method and path pattern; "*" segments are captured.
type route struct {
	method  string
	pattern []string
	scope   auth.Scope // "" = public
	h       handlerFunc
}

// routes is the route table: the Server's own routes and those of the
// handler types, each given only what it needs.
func (s *Server) routes() []route {
	peers := peerAPI{net: s.net, a: s.a, authorize: s.authorize, findAgents: s.findAgents, streams: s.streams}
	groups := groupAPI{groups: s.groups, a: s.a, streams: s.streams}
	hils := hilAPI{hil: s.hil, clock: s.a.Clock(), authorize: s.authorize, streams: s.streams}
	admin := adminAPI{a: s.a, version: s.version, reloader: s.reloader, draining: &s.draining, streams: s.streams}
	return slices.Concat([]route{
		{"GET", seg("health"), "", admin.health},
		{"GET", seg("identity"), "", admin.identity},
		{"GET", seg("capabilities"), "", s.capabilities},
		{"GET", seg("capabilities/task-types/*"), "", s.taskTypeCapability},

		{"POST", seg("task"), auth.ScopeTasksWrite, s.submit},
		{"POST", seg("task/multipart"), auth.ScopeTasksWrite, s.submitMultipart},
		{"GET", seg("tasks"), auth.ScopeTasksRead, s.listTasks},
		{"GET", seg("tasks/summary"), auth.ScopeTasksRead, s.taskSummary},
		{"GET", seg("task/*"), auth.ScopeTasksRead, s.getTask},
		{"GET", seg("task/*/status"), auth.ScopeTasksRead, s.getTaskStatus},
		{"POST", seg("task/*/cancel"), auth.ScopeTasksWrite, s.cancelTask},
		{"POST", seg("task/*/info"), auth.ScopeTasksWrite, s.provideInfo},
		{"POST", seg("task/*/decision"), auth.ScopeTasksWrite, s.decide},
		{"GET", seg("task/*/stream"), auth.ScopeTasksRead, s.streamTask},

		{"GET", seg("tier1/exports"), auth.ScopeTier1Read, s.tier1Exports},
		{"POST", seg("tier1/exports/*/pause"), auth.ScopeAdmin, s.tier1Exports},
		{"POST", seg("tier1/exports/*/resume"), auth.ScopeAdmin, s.tier1Exports},
	}, s.withTier1([]route{
		{"GET", seg("tier1/routines"), auth.ScopeTier1Read, s.tier1Routines},
		{"GET", seg("tier1/stream"), auth.ScopeTier1Write, s.tier1Stream},
		{"POST", seg("tier1/*"), auth.ScopeTier1Write, s.ingestTier1},
		{"GET", seg("tier1/*/frames"), auth.ScopeTier1Read, s.tier1Frames},
		{"GET", seg("tier1/*/frames/stream"), auth.ScopeTier1Read, s.tier1Live},
	}), admin.routes(), withNet(s.net, peers.routes()), hils.routes(), s.discoveryRoutes(), groups.routes(),
		withNet(s.net, contractAPI{net: s.net}.routes()), auditAPI{a: s.a}.routes())
}

func seg(p string) []string { return strings.Split(p, "/") }

// withNet marks the routes of the peer network: without one they answer
// 503.
func withNet(n *peer.Network, rs []route) []route {
	for i := range rs {
		h := rs[i].h
		rs[i].h = func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
			if n == nil {
				return wire.Errorf(wire.CodeAgentNotReady, "the peer network is not running on this server")
			}
			return h(ctx, p, args)
		}
	}
	return rs
}

// withTier1 marks the routes of tier 1: without it (Options.Tier1) they
// answer 503.
func (s *Server) withTier1(rs []route) []route {
	for i := range rs {
		h := rs[i].h
		rs[i].h = func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
			if s.t1 == nil {
				return wire.Errorf(wire.CodeAgentNotReady, "tier 1 is not running on this server")
			}
			return h(ctx, p, args)
		}
	}
	return rs
}

// route dispatches a request. Unknown paths are 404, known paths with
// another method 405.
func (s *Server) route(ctx *fasthttp.RequestCtx) error {
	path := string(ctx.Path())
	if path == "/" || strings.HasPrefix(path, consolePrefix) {
		return s.console(ctx, path)
	}
	if path == "/metrics" {
		if _, err := s.authorize(ctx, auth.ScopeMetrics); err != nil {
			return err
		}
		return writeMetrics(ctx, s.a.Metrics())
	}
	if a2ahttp.Serves(path) {
		return s.a2a.Serve(ctx, path)
	}
	rest, ok := strings.CutPrefix(path, wire.APIPrefix+"/")
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "no route %s", path)
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	method := string(ctx.Method())
	if method == fasthttp.MethodHead {
		method = fasthttp.MethodGet
	}
	pathMatched := false
	for _, r := range s.table {
		args, ok := match(r.pattern, parts)
		if !ok {
			continue
		}
		pathMatched = true
		if r.method != method {
			continue
		}
		var p auth.Principal
		if r.scope != "" {
			var err error
			if p, err = s.authorize(ctx, r.scope); err != nil {
				return err
			}
		}
		if method != fasthttp.MethodGet {
			release, err := s.readBody(ctx, r.scope == "")
			if err != nil {
				return err
			}
			defer release()
		}
		return r.h(ctx, p, args)
	}
	if pathMatched {
		return wire.Errorf(wire.CodeMethodNotAllowed, "%s is not allowed on %s", method, path)
	}
	return wire.Errorf(wire.CodeNotFound, "no route %s", path)
}

func match(pattern, parts []string) ([]string, bool) {
	if len(pattern) != len(parts) {
		return nil, false
	}
	var args []string
	for i, p := range pattern {
		switch {
		case p == "*":
			if parts[i] == "" {
				return nil, false
			}
			args = append(args, parts[i])
		case p != parts[i]:
			return nil, false
		}
	}
	return args, true
}

// authorize checks the bearer token and its scope.
func (s *Server) authorize(ctx *fasthttp.RequestCtx, scope auth.Scope) (auth.Principal, error) {
	tok, ok := bearer(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))
	if !ok {
		tok, ok = wsBearer(ctx) // browsers' WebSockets (websocket.go)
	}
	if !ok {
		if p, ok := s.certPrincipal(ctx); ok {
			if !p.Can(scope) {
				return p, wire.Errorf(wire.CodePermissionDenied, "this client certificate (%s) lacks the %q scope", p.Name, scope).With("scope", string(scope))
			}
			return p, nil
		}
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="synapse"`)
		return auth.Principal{}, wire.Errorf(wire.CodeUnauthorized, "missing Authorization: Bearer <token>")
	}
	p, err := s.a.Tokens().Authenticate(string(tok))
	if err != nil {
		ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="synapse", error="invalid_token"`)
		return p, err
	}
	ctx.SetUserValue(principalKey{}, p)
	if !p.Can(scope) {
		return p, wire.Errorf(wire.CodePermissionDenied, "this token lacks the %q scope", scope).With("scope", string(scope))
	}
	return p, nil
}

// certPrincipal is the principal of the request's client certificate,
// verified by the handshake against tls.client_ca_file and mapped in
// tls.clients. It is not a token: it is not revoked, so its streams end
// only with the server (principalKey is left unset).
func (s *Server) certPrincipal(ctx *fasthttp.RequestCtx) (auth.Principal, bool) {
	if s.certs == nil {
		return auth.Principal{}, false
	}
	st := ctx.TLSConnectionState()
	if st == nil || len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return auth.Principal{}, false
	}
	return s.certs.Principal(st.PeerCertificates[0])
}

// principalKey holds the authorized principal of a request, for streams
// that end when its token is revoked (streamDone).
type principalKey struct{}

// bearer returns the token of an "Authorization: Bearer <token>" value;
// the scheme is case-insensitive (RFC 9110 §11.1).
func bearer(h []byte) ([]byte, bool) {
	h = bytes.TrimSpace(h)
	if len(h) < 7 || !bytes.EqualFold(h[:6], []byte("bearer")) || (h[6] != ' ' && h[6] != '\t') {
		return nil, false
	}
	tok := bytes.TrimSpace(h[7:])
	return tok, len(tok) > 0
}
