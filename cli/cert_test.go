package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
)

// TestCertInitDefaultDir: without --dir, cert init writes into tls/ of
// the data directory ($SYNAPSE_DATA), not beside the identity key.
func TestCertInitDefaultDir(t *testing.T) {
	data := t.TempDir()
	t.Setenv("SYNAPSE_DATA", data)
	var out, errb bytes.Buffer
	if code := cli.Main(context.Background(), []string{"cert", "init", "--host", "127.0.0.1"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("cert init: exit %d %s", code, errb.String())
	}
	for _, f := range []string{"agent.key", "agent.crt"} {
		if _, err := os.Stat(filepath.Join(data, "tls", f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "agent.key")); err == nil {
		t.Error("cert init wrote agent.key into the data directory itself")
	}
	if !strings.Contains(out.String(), "sha256:") {
		t.Errorf("output %q has no fingerprint", out.String())
	}
}
