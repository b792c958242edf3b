//go:build !grpc

package cli_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
)

// TestServeNoGRPCFlag: the default build has no gRPC API, so no
// --grpc-listen either.
func TestServeNoGRPCFlag(t *testing.T) {
	code, _, errOut := runCLI(t, "", "serve", "--grpc-listen", "127.0.0.1:9090")
	if code != cli.ExitUsage || !strings.Contains(errOut, "flag provided but not defined: -grpc-listen") {
		t.Errorf("serve --grpc-listen: exit %d, stderr:\n%s\nwant exit 2: no such flag", code, errOut)
	}
}
