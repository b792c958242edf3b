//go:build !grpc

package cli_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// TestServeNoGRPCFlag: the default build has no gRPC API, so no
// --grpc-listen either, and it says which build has it.
func TestServeNoGRPCFlag(t *testing.T) {
	code, _, errOut := clitest.Run(t, "", "serve", "--grpc-listen", "127.0.0.1:9090")
	if code != cli.ExitUsage || !strings.Contains(errOut, "--grpc-listen needs the gRPC build: make build-grpc") {
		t.Errorf("serve --grpc-listen: exit %d, stderr:\n%s\nwant exit 2 naming the gRPC build", code, errOut)
	}
}
