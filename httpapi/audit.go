package httpapi

import (
	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// auditAPI serves the audit log's routes, from the agent.
type auditAPI struct {
	a *agent.Agent
}

func (au auditAPI) routes() []route {
	return []route{
		{"GET", seg("audit"), auth.ScopeAdmin, au.log},
		{"GET", seg("audit/verify"), auth.ScopeAdmin, au.verify},
	}
}

// log serves GET /audit?after=&limit=: the security events in order.
func (au auditAPI) log(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
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
	recs, err := au.a.AuditLog(after, limit)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"records": recs})
	return nil
}

// verify serves GET /audit/verify: the hash chain checked end to end.
func (au auditAPI) verify(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	rep, err := au.a.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, &rep)
	return nil
}
