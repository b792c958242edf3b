package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

func (s *Server) auditRoutes() []route {
	return []route{
		{"GET", seg("audit"), auth.ScopeAdmin, s.auditLog},
		{"GET", seg("audit/verify"), auth.ScopeAdmin, s.auditVerify},
	}
}

// auditLog serves GET /audit?after=&limit=: the security events in order.
func (s *Server) auditLog(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	limit, err := queryInt(ctx, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	var after uint64
	if raw := ctx.QueryArgs().Peek("after"); len(raw) > 0 {
		n, ok := parseUint(raw)
		if !ok {
			return wire.Errorf(wire.CodeInvalidParams, "after must be a record seq (a whole number)").With("field", "after")
		}
		after = n
	}
	recs, err := s.a.AuditLog(after, limit)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"records": recs})
	return nil
}

// auditVerify serves GET /audit/verify: the hash chain checked end to end.
func (s *Server) auditVerify(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	rep, err := s.a.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, &rep)
	return nil
}
