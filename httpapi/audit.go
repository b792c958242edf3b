package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
)

func (s *Server) auditRoutes() []route {
	return []route{
		{"GET", seg("audit"), agent.ScopeAdmin, s.auditLog},
		{"GET", seg("audit/verify"), agent.ScopeAdmin, s.auditVerify},
	}
}

// auditLog serves GET /audit?after=&limit=: the security events in order.
func (s *Server) auditLog(ctx *fasthttp.RequestCtx, _ agent.Principal, _ []string) error {
	limit, err := queryInt(ctx, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	after, err := queryInt(ctx, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	recs, err := s.a.AuditLog(uint64(after), limit)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []*store.AuditRecord{}
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"records": recs})
	return nil
}

// auditVerify serves GET /audit/verify: the hash chain checked end to end.
func (s *Server) auditVerify(ctx *fasthttp.RequestCtx, _ agent.Principal, _ []string) error {
	rep, err := s.a.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, &rep)
	return nil
}
