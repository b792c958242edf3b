package httpapi

import (
	"bytes"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/wire"
)

// health serves GET /health: 200 SERVING, or 503 NOT_SERVING with the
// reason once shutdown has begun or while the store cannot commit.
func (s *Server) health(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	h := &wire.Health{Status: "SERVING", Version: s.version, UptimeSeconds: int64(s.a.Uptime().Seconds())}
	status := fasthttp.StatusOK
	err := s.a.Serving()
	if err == nil && s.draining.Load() {
		err = wire.Errorf(wire.CodeAgentNotReady, "shutting down").With("reason", "shutting_down")
	}
	if err != nil {
		h.Status, status = "NOT_SERVING", fasthttp.StatusServiceUnavailable
		if r, ok := wire.AsError(err).Details["reason"].(string); ok {
			h.Reason = r
		}
	}
	if s.reloader != nil {
		h.Config = s.reloader.Status()
	}
	write(ctx, status, h)
	return nil
}

// reload serves POST /admin/reload: the configuration file read again,
// checked whole and its live values applied; 200 with the result, or 422
// with every problem when the file is refused (nothing changed).
func (s *Server) reload(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	if s.reloader == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "this server has no configuration file to reload")
	}
	res := s.reloader.Reload(ctx, "api")
	status := fasthttp.StatusOK
	if res.Result != wire.ReloadOK {
		status = fasthttp.StatusUnprocessableEntity
	}
	write(ctx, status, &res)
	return nil
}

func (s *Server) identity(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	id := s.a.Identity()
	write(ctx, fasthttp.StatusOK, &id)
	return nil
}

func (s *Server) metrics(ctx *fasthttp.RequestCtx) error {
	var buf bytes.Buffer
	s.a.Metrics().Write(&buf)
	writeRaw(ctx, fasthttp.StatusOK, "text/plain; version=0.0.4; charset=utf-8", buf.Bytes())
	return nil
}

func (s *Server) createToken(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	var req struct {
		Name   string       `json:"name" msgpack:"name"`
		Scopes []auth.Scope `json:"scopes" msgpack:"scopes"`
	}
	if err := decode(ctx, &req); err != nil {
		return err
	}
	t, err := s.a.Tokens().Create(ctx, req.Name, req.Scopes)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusCreated, t)
	return nil
}

func (s *Server) listTokens(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	list, err := s.a.Tokens().List()
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "list tokens: %v", err)
	}
	if list == nil {
		list = []auth.TokenInfo{}
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"tokens": list})
	return nil
}

func (s *Server) revokeToken(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	if err := s.a.Tokens().Revoke(ctx, args[0]); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// backup streams a consistent copy of the data file with its exact length;
// writes go on meanwhile.
func (s *Server) backup(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	s.streams.takeOver(ctx, "", func(w *sse.Writer, _ <-chan struct{}) error {
		_, err := s.a.Store().Backup(w, func(size int64) error {
			_, err := w.WriteString(sse.Header(fasthttp.StatusOK, "application/octet-stream",
				`Content-Disposition: attachment; filename="synapse.db"`,
				"Content-Length: "+strconv.FormatInt(size, 10)))
			return err
		})
		return err
	})
	return nil
}

func (s *Server) checkDB(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	rep, err := s.a.Store().Check(ctx)
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "%v", err)
	}
	write(ctx, fasthttp.StatusOK, &rep)
	return nil
}
