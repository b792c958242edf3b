//go:build grpc

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"

	"google.golang.org/grpc"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/grpcapi"
	"github.com/synapse-edge/synapse/internal/tlscert"
	"github.com/synapse-edge/synapse/peer"
)

// extraServers adds the gRPC API (--grpc-listen, default off) in a binary
// built with -tags grpc.
type extraServers struct {
	grpcListen *string
}

func addExtraFlags(fs *flag.FlagSet) *extraServers {
	return &extraServers{grpcListen: fs.String("grpc-listen", "", "address of the gRPC API, e.g. 127.0.0.1:9090 (default off)")}
}

// start starts the gRPC server when --grpc-listen is set; the function it
// returns stops it.
func (x *extraServers) start(_ context.Context, a *agent.Agent, nw *peer.Network, gm *group.Manager, tlsSrv *tlscert.Server, log *slog.Logger) (func(context.Context) error, error) {
	if *x.grpcListen == "" {
		return func(context.Context) error { return nil }, nil
	}
	ln, err := net.Listen("tcp", *x.grpcListen)
	if err != nil {
		return nil, fmt.Errorf("grpc listen on %s: %w", *x.grpcListen, err)
	}
	opts := grpcapi.Options{Logger: log, Version: Version, Groups: gm, Network: nw}
	if tlsSrv != nil {
		// The same certificate, client CA, client_auth and certificate
		// principals as the HTTP API, with gRPC's ALPN.
		opts.TLS = tlsSrv.TLS.Clone()
		opts.TLS.NextProtos = []string{"h2"}
		if tlsSrv.Clients != nil {
			opts.ClientCerts = tlsSrv.Clients
		}
	}
	srv := grpcapi.New(a, opts)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	return func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		if serr := <-served; serr != nil && !errors.Is(serr, grpc.ErrServerStopped) {
			return errors.Join(err, serr)
		}
		return err
	}, nil
}
