package httpapi

import (
	"bytes"
	"strconv"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// adminAPI serves the agent's own routes: health, identity, tokens, the
// database file and the configuration reload. GET /metrics, outside the
// route table, is writeMetrics.
type adminAPI struct {
	a        *agent.Agent
	version  string
	reloader Reloader // nil: POST /admin/reload answers 503
	// draining is the Server's, set when Shutdown begins.
	draining *atomic.Bool
	streams  *streamer
}

// routes are the admin routes of the route table; health and identity,
// public, are at its head.
func (ad adminAPI) routes() []route {
	return []route{
		{"POST", seg("tokens"), auth.ScopeAdmin, ad.createToken},
		{"GET", seg("tokens"), auth.ScopeAdmin, ad.listTokens},
		{"DELETE", seg("tokens/*"), auth.ScopeAdmin, ad.revokeToken},
		{"GET", seg("admin/db/backup"), auth.ScopeAdmin, ad.backup},
		{"GET", seg("admin/db/check"), auth.ScopeAdmin, ad.checkDB},
		{"POST", seg("admin/reload"), auth.ScopeAdmin, ad.reload},
	}
}

// health serves GET /health: 200 SERVING, or 503 NOT_SERVING with the
// reason once shutdown has begun or while the store cannot commit.
func (ad adminAPI) health(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	h := &wire.Health{Status: "SERVING", Version: ad.version, UptimeSeconds: int64(ad.a.Uptime().Seconds())}
	status := fasthttp.StatusOK
	err := ad.a.Serving()
	if err == nil && ad.draining.Load() {
		err = wire.Errorf(wire.CodeAgentNotReady, "shutting down").With("reason", "shutting_down")
	}
	if err != nil {
		h.Status, status = "NOT_SERVING", fasthttp.StatusServiceUnavailable
		if r, ok := wire.AsError(err).Details["reason"].(string); ok {
			h.Reason = r
		}
	}
	if ad.reloader != nil {
		h.Config = ad.reloader.Status()
	}
	write(ctx, status, h)
	return nil
}

// reload serves POST /admin/reload: the configuration file read again,
// checked whole and its live values applied; 200 with the result, or 422
// with every problem when the file is refused (nothing changed).
func (ad adminAPI) reload(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	if ad.reloader == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "this server has no configuration file to reload")
	}
	res := ad.reloader.Reload(ctx, "api")
	status := fasthttp.StatusOK
	if res.Result != wire.ReloadOK {
		status = fasthttp.StatusUnprocessableEntity
	}
	write(ctx, status, &res)
	return nil
}

func (ad adminAPI) identity(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	id := ad.a.Identity()
	write(ctx, fasthttp.StatusOK, &id)
	return nil
}

// writeMetrics serves GET /metrics (route checks its scope).
func writeMetrics(ctx *fasthttp.RequestCtx, reg *metrics.Registry) error {
	var buf bytes.Buffer
	reg.Write(&buf)
	writeRaw(ctx, fasthttp.StatusOK, "text/plain; version=0.0.4; charset=utf-8", buf.Bytes())
	return nil
}

func (ad adminAPI) createToken(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	var req struct {
		Name   string       `json:"name" msgpack:"name"`
		Scopes []auth.Scope `json:"scopes" msgpack:"scopes"`
	}
	if err := decode(ctx, &req); err != nil {
		return err
	}
	t, err := ad.a.Tokens().Create(ctx, req.Name, req.Scopes)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusCreated, t)
	return nil
}

func (ad adminAPI) listTokens(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	list, err := ad.a.Tokens().List()
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "list tokens: %v", err)
	}
	if list == nil {
		list = []auth.TokenInfo{}
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"tokens": list})
	return nil
}

func (ad adminAPI) revokeToken(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	if err := ad.a.Tokens().Revoke(ctx, args[0]); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// backup streams a consistent copy of the data file with its exact length;
// writes go on meanwhile.
func (ad adminAPI) backup(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	ad.streams.takeOver(ctx, "", func(w *sse.Writer, _ <-chan struct{}) error {
		_, err := ad.a.Store().Backup(w, func(size int64) error {
			_, err := w.WriteString(sse.Header(fasthttp.StatusOK, "application/octet-stream",
				`Content-Disposition: attachment; filename="synapse.db"`,
				"Content-Length: "+strconv.FormatInt(size, 10)))
			return err
		})
		return err
	})
	return nil
}

func (ad adminAPI) checkDB(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	rep, err := ad.a.Store().Check(ctx, tier1.CheckRecords)
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "%v", err)
	}
	write(ctx, fasthttp.StatusOK, &rep)
	return nil
}
