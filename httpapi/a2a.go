package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
)

// a2aHost lends the A2A binding (package a2a/a2ahttp, mounted on its two
// paths by route) what every route has: the token check, the body limit
// and budget of a route with a token, the stream take-over.
type a2aHost struct{ s *Server }

func (h a2aHost) Authorize(ctx *fasthttp.RequestCtx, scope auth.Scope) (auth.Principal, error) {
	return h.s.authorize(ctx, scope)
}

func (h a2aHost) ReadBody(ctx *fasthttp.RequestCtx) (release func(), err error) {
	return h.s.readBody(ctx, false)
}

func (h a2aHost) TakeOver(ctx *fasthttp.RequestCtx, header string, fn func(w *sse.Writer, done <-chan struct{}) error) {
	h.s.streams.takeOver(ctx, header, fn)
}
