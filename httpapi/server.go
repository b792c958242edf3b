package httpapi

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/a2a/a2ahttp"
	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/metrics"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// Server serves one agent.
type Server struct {
	a       *agent.Agent
	net     *peer.Network
	log     *slog.Logger
	version string
	srv     *fasthttp.Server

	// streams runs the SSE and WebSocket connections (stream.go).
	streams *streamer
	// bg is cancelled when shutdown starts; work a stream queues uses it.
	bg        context.Context
	cancelBg  context.CancelFunc
	closeOnce sync.Once
	// draining is set when Shutdown begins: /health answers 503.
	draining atomic.Bool
	// lnMu guards listeners, the listeners Serve was given, which
	// Shutdown closes: fasthttp knows a listener only once its Serve has
	// run that far, so a Shutdown just before would leave it serving.
	lnMu      sync.Mutex
	listeners []net.Listener

	table    []route
	a2a      *a2ahttp.Handler
	hil      *hil.Manager
	exports  Exports
	t1       *tier1.Service // nil: the tier-1 routes answer 503
	groups   *group.Manager
	requests *metrics.CounterVec
	panics   *metrics.Counter
	// bodies bounds the request bodies in memory, publicBodies those of
	// routes without a token (body.go).
	bodies, publicBodies *budget
	limits               Limits
	tls                  *tls.Config
	certs                CertPrincipals
	reloader             Reloader
	tier1Window          int // Options.Tier1ReadAhead
	// msgBufs lends WebSocket message buffers (msgbuf.go).
	msgBufs *msgBufs
}

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// Version is reported by /health.
	Version string
	// HIL, if set, serves the human-in-the-loop routes (/hil...); the
	// caller starts and closes it. Without it they answer 503.
	HIL *hil.Manager
	// Groups, if set, serves the group routes (/group..., /groups); the
	// caller starts and closes it. Without it they answer 503.
	Groups *group.Manager
	// Network, if set, serves the peer network's routes (/message,
	// /agents, /pairing, /outbox, /registry, /negotiate, /contracts...);
	// the agent opens and closes it. Without it they answer 503.
	Network *peer.Network
	// Limits of the server; the zero value means DefaultLimits. Check
	// them with Limits.Validate first.
	Limits Limits
	// TLS, if set, serves every connection over TLS with this config
	// (package internal/tlscert builds it); the console then sends HSTS.
	TLS *tls.Config
	// ClientCerts, if set, finds the principal of a verified client
	// certificate; a request with one needs no bearer token.
	ClientCerts CertPrincipals
	// Reloader, if set, serves POST /admin/reload and adds the
	// configuration's status to /health. Without it the route answers
	// 503.
	Reloader Reloader
	// Tier1ReadAhead is how many batches of one tier-1 stream may wait
	// for their answers before the server stops reading it (the command
	// derives it from limits.memory_mb). Default 4096.
	Tier1ReadAhead int
	// Exports, if set, are served at /tier1/exports; without, none.
	Exports Exports
	// Tier1, if set, serves the tier-1 routes (/tier1/...: ingest, the
	// stream, routines, frames) with its ingestor; the agent opens it
	// (agent.Options.Tier1). Without it they answer 503.
	Tier1 *tier1.Service
}

// Reloader reads the agent's configuration file again and applies it
// (the command's job: it owns the file).
type Reloader interface {
	// Reload reads, checks and applies the file; trigger says who asked
	// (sighup, api).
	Reload(ctx context.Context, trigger string) wire.ReloadResult
	// Status is the file in force and the last reload.
	Status() *wire.ConfigStatus
}

// CertPrincipals maps a client certificate the handshake verified onto
// a principal (tlscert.Clients).
type CertPrincipals interface {
	Principal(cert *x509.Certificate) (auth.Principal, bool)
}

// New builds a server for a (opened) agent.
func New(a *agent.Agent, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits()
	}
	s := &Server{
		a: a, log: opts.Logger.With("component", "http"), version: opts.Version,
		hil: opts.HIL, groups: opts.Groups, net: opts.Network,
		limits: opts.Limits, tls: opts.TLS, certs: opts.ClientCerts, reloader: opts.Reloader, exports: opts.Exports, t1: opts.Tier1,
		tier1Window: cmp.Or(opts.Tier1ReadAhead, tier1Window),
	}
	s.bg, s.cancelBg = context.WithCancel(context.Background())
	s.msgBufs = newMsgBufs(s.bg.Done())
	s.streams = &streamer{done: make(chan struct{}), bg: s.bg, log: s.log, tokens: a.Tokens()}
	s.table = s.routes()
	s.a2a = a2ahttp.New(a, a2aHost{s}, opts.Version)
	s.provideInterfaces()
	reg := a.Metrics()
	s.requests = reg.CounterVec("synapse_http_requests_total", "HTTP requests answered, by status code.", "code")
	s.panics = reg.Counter("synapse_http_panics_total", "Requests whose handler panicked (answered 500).")
	s.streams.panics = s.panics
	cfg := a.Config()
	t1Max := 0
	if s.t1 != nil {
		t1Max = s.t1.Config().MaxBatchBytes
	}
	h := opts.Limits
	s.bodies = newBudget(h.MaxInflightBodyBytes)
	s.publicBodies = newBudget(max(h.MaxInflightBodyBytes/4, int64(h.MaxBodyBytes)))
	reg.GaugeFunc("synapse_http_body_bytes_in_flight", "Request body bytes being read or handled.", func() float64 {
		return float64(s.bodies.inUse() + s.publicBodies.inUse())
	})
	s.srv = &fasthttp.Server{
		Handler:      s.handle,
		Logger:       connLogger{s.log},
		Name:         "synapse",
		ReadTimeout:  time.Duration(h.ReadTimeoutSeconds) * time.Second,
		WriteTimeout: time.Duration(h.WriteTimeoutSeconds) * time.Second,
		IdleTimeout:  time.Duration(h.IdleTimeoutSeconds) * time.Second,
		// limitListener enforces max_conns and max_conns_per_ip and
		// answers in the error shape; fasthttp's own limit is a backstop.
		Concurrency:    h.MaxConns + 64,
		ReadBufferSize: h.MaxHeaderBytes,
		// Bodies are streamed and read by readBody once the request is
		// authorized, within its route's limit and the body budget.
		StreamRequestBody:             true,
		DisablePreParseMultipartForm:  true,
		MaxRequestBodySize:            max(h.MaxBodyBytes, t1Max, int(cfg.MaxFileSize)+1<<20),
		DisableHeaderNamesNormalizing: false,
		NoDefaultServerHeader:         false,
		NoDefaultContentType:          true,
		CloseOnShutdown:               true,
		ReduceMemoryUsage:             false,
		// fasthttp reads min(limit, Content-Length, 8 KiB) of a streamed
		// body before the handler runs; a limit of 1 makes that one byte, so
		// that a refused request (no token, over the route's limit) is
		// answered after its first body byte rather than after 8 KiB. One
		// that declares more than its route's limit is answered from the
		// headers alone (headerReceived).
		HeaderReceived:        s.headerReceived,
		ExpectHandler:         s.expect,
		ErrorHandler:          s.connError,
		SecureErrorLogMessage: true,
	}
	return s
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.lnMu.Lock()
	if s.draining.Load() {
		s.lnMu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners = append(s.listeners, ln)
	s.lnMu.Unlock()
	h := s.limits
	err := s.srv.Serve(newLimitListener(ln, h.MaxConns, h.MaxConnsPerIP, s.tls))
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Shutdown stops accepting, ends the streams, and waits for requests in
// flight until ctx is done. It is safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.lnMu.Lock()
	s.draining.Store(true)
	s.lnMu.Unlock()
	s.closeOnce.Do(func() {
		close(s.streams.done)
		s.cancelBg()
		err = s.srv.ShutdownWithContext(ctx)
		// A listener fasthttp had not taken yet: closed, its Serve ends.
		s.lnMu.Lock()
		for _, ln := range s.listeners {
			_ = ln.Close()
		}
		s.lnMu.Unlock()
		done := make(chan struct{})
		go func() { s.streams.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
		}
	})
	return err
}

// handle is the root handler: panic recovery, metrics, routing.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	defer func() {
		if p := recover(); p != nil {
			s.panics.Inc()
			s.log.Error("handler panicked", "path", string(ctx.Path()), "panic", p)
			ctx.Response.Reset()
			writeError(ctx, wire.Errorf(wire.CodeInternal, ""))
		}
		s.requests.With(statusLabel(ctx.Response.StatusCode())).Add(1)
	}()
	if err := s.route(ctx); err != nil {
		writeError(ctx, err)
	}
}

func statusLabel(code int) string {
	switch code {
	case 200:
		return "200"
	case 201:
		return "201"
	case 304:
		return "304"
	case 400:
		return "400"
	case 401:
		return "401"
	case 404:
		return "404"
	case 429:
		return "429"
	}
	return fmt.Sprint(code)
}
