package httpapi

import (
	"bytes"
	"context"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// Exports are the tier-1 exports (package tier1/export's Set): Status is
// the answer of GET /tier1/exports; Pause and Resume fail with ok false
// for a name that is not an export.
type Exports interface {
	StatusJSON() any
	Pause(ctx context.Context, name string) error
	Resume(ctx context.Context, name string) error
	Has(name string) bool
}

// tier1Exports serves GET /tier1/exports, POST /tier1/exports/{name}/pause and /resume.
func (s *Server) tier1Exports(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	if len(args) == 0 {
		if s.exports == nil {
			write(ctx, fasthttp.StatusOK, map[string]any{"exports": []any{}})
		} else {
			write(ctx, fasthttp.StatusOK, s.exports.StatusJSON())
		}
		return nil
	}
	if s.exports == nil || !s.exports.Has(args[0]) {
		return wire.Errorf(wire.CodeNotFound, "no export named %q", args[0])
	}
	do := s.exports.Pause
	if bytes.HasSuffix(ctx.Path(), []byte("/resume")) {
		do = s.exports.Resume
	}
	if err := do(ctx, args[0]); err != nil {
		return wire.Errorf(wire.CodeSysStorage, "%v", err)
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"ok": true})
	return nil
}
