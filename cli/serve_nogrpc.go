//go:build !grpc

package cli

import (
	"context"
	"flag"
	"log/slog"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/tlscert"
	"github.com/synapse-edge/synapse/peer"
)

// extraServers are the servers a build adds next to the HTTP API: none in
// the default build (serve_grpc.go adds the gRPC API with -tags grpc).
type extraServers struct{}

func addExtraFlags(*flag.FlagSet) *extraServers { return &extraServers{} }

// start starts the extra servers; the function it returns stops them.
func (*extraServers) start(context.Context, *agent.Agent, *peer.Network, *group.Manager, *tlscert.Server, *slog.Logger) (func(context.Context) error, error) {
	return func(context.Context) error { return nil }, nil
}
