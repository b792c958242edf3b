//go:build grpc

package grpcapi

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/peer"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// maxMessage bounds a received gRPC message: a task with files of up to
// max_file_size each, with room for the rest of the request.
const maxMessage = 64 << 20

// Keepalive (seed 003 §5.1). The seed's client pings every 30 s, also
// without calls (PermitWithoutStream), and waits 10 s for the answer.
// grpc-go's server by default refuses pings closer than 5 minutes and
// those without streams: it would send such a client GOAWAY
// too_many_pings after its third ping (about 90 s). This server admits
// pings down to DefaultKeepaliveMinTime apart, with or without calls (so
// grpc-go clients at their 10 s floor are admitted too), and pings idle
// clients itself every 30 s, closing connections whose answer does not
// come within 10 s.
const (
	DefaultKeepaliveMinTime = 5 * time.Second
	keepaliveServerPing     = 30 * time.Second
	keepaliveServerTimeout  = 10 * time.Second
)

// Options configure a Server.
type Options struct {
	// Logger, by default discarding.
	Logger *slog.Logger
	// Version is reported by HealthCheck.
	Version string
	// Groups serves GroupService; without it its RPCs answer
	// Unavailable (like the REST group routes without groups).
	Groups *group.Manager
	// Network serves MessageService and the agent queries; without it
	// they answer Unavailable.
	Network *peer.Network
	// KeepaliveMinTime is the shortest interval between client pings
	// admitted; default DefaultKeepaliveMinTime.
	KeepaliveMinTime time.Duration
	// TLS, if set, serves every connection over TLS with this config
	// (package internal/tlscert builds it; ALPN h2 is added), its client
	// CA and client_auth as on the HTTP API.
	TLS *tls.Config
	// ClientCerts, if set, finds the principal of a verified client
	// certificate; a call with one needs no bearer token (auth.go).
	ClientCerts CertPrincipals
}

// Server is the gRPC server of one agent.
type Server struct {
	a       *agent.Agent
	net     *peer.Network
	groups  *group.Manager
	log     *slog.Logger
	version string
	g       *grpc.Server
	health  *health.Server
	certs   CertPrincipals
	// done is closed by Shutdown; streams end when it is.
	done     chan struct{}
	stopOnce sync.Once
	// watched is closed when watchHealth has returned.
	watched chan struct{}

	pb.UnimplementedTaskServiceServer
	pb.UnimplementedSynapseMessageServiceServer
	pb.UnimplementedCapabilitiesServiceServer
	pb.UnimplementedGroupServiceServer
	pb.UnimplementedHealthServiceServer
}

// New builds the server for an open agent.
func New(a *agent.Agent, opts Options) *Server {
	s := &Server{a: a, net: opts.Network, groups: opts.Groups, log: opts.Logger, version: opts.Version,
		health: health.NewServer(), done: make(chan struct{}), certs: opts.ClientCerts}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	minPing := opts.KeepaliveMinTime
	if minPing <= 0 {
		minPing = DefaultKeepaliveMinTime
	}
	var creds []grpc.ServerOption
	if opts.TLS != nil {
		creds = append(creds, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.g = grpc.NewServer(append(creds,
		grpc.ChainUnaryInterceptor(s.unary),
		grpc.ChainStreamInterceptor(s.stream),
		grpc.MaxRecvMsgSize(maxMessage),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: minPing, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveServerPing, Timeout: keepaliveServerTimeout}),
	)...)
	pb.RegisterTaskServiceServer(s.g, s)
	pb.RegisterSynapseMessageServiceServer(s.g, s)
	pb.RegisterCapabilitiesServiceServer(s.g, s)
	pb.RegisterGroupServiceServer(s.g, s)
	pb.RegisterHealthServiceServer(s.g, s)
	healthpb.RegisterHealthServer(s.g, s.health)
	reflection.Register(s.g)
	for name := range s.g.GetServiceInfo() {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.watched = make(chan struct{})
	go s.watchHealth()
	return s
}

// healthPoll is how often grpc.health.v1 is brought in line with the
// agent's own health (agent.Agent.Serving: the store commits, the agent is
// not shutting down).
const healthPoll = time.Second

// watchHealth sets every service NOT_SERVING while the agent does not
// serve, and SERVING again when it does, until Shutdown.
func (s *Server) watchHealth() {
	defer close(s.watched)
	t := time.NewTicker(healthPoll)
	defer t.Stop()
	serving := true
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		now := s.a.Serving() == nil
		if now == serving {
			continue
		}
		serving = now
		st := healthpb.HealthCheckResponse_SERVING
		if !now {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		for name := range s.g.GetServiceInfo() {
			s.health.SetServingStatus(name, st)
		}
		s.health.SetServingStatus("", st)
	}
}

// Serve serves on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("grpc serving", "listen", ln.Addr().String())
	return s.g.Serve(ln)
}

// Shutdown reports NOT_SERVING, ends the streams, and waits for running
// calls until ctx is done; then it stops the rest.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.watched // no status set after the final NOT_SERVING
	s.health.Shutdown()
	stopped := make(chan struct{})
	go func() {
		s.g.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		s.g.Stop()
		<-stopped
		return ctx.Err()
	}
}

// needNet is the error of the RPCs of the peer network when the server
// has none.
func (s *Server) needNet() error {
	if s.net == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "the peer network is not running on this server")
	}
	return nil
}
