package configcmd_test

import (
	"os"
	"testing"

	"github.com/synapse-edge/synapse/client/agenttest"
)

// synapseBin is the binary the end-to-end tests start agents of.
var synapseBin agenttest.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	synapseBin.Cleanup()
	os.Exit(code)
}
