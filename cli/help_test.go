package cli_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// TestHelpOfHelp: help answers --help like every command, and serve's
// flags read like the other commands' (--data DIR, not -data string).
func TestHelpOfHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "--help"}, {"help", "-h"}} {
		code, out, errOut := clitest.Run(t, "", args...)
		if code != cli.ExitOK || !strings.HasPrefix(out, "Usage: synapse help") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	code, out, _ := clitest.Run(t, "", "serve", "--help")
	if code != cli.ExitOK || !strings.Contains(out, "  --data DIR ") || strings.Contains(out, "-data string") {
		t.Errorf("serve --help: exit %d\n%s", code, out)
	}
}
