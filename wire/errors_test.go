package wire_test

import (
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestErrorfHidesDirectories: a storage error that names the data file
// reaches the client without the directory the agent keeps it in.
func TestErrorfHidesDirectories(t *testing.T) {
	cause := fmt.Errorf("commit: %w", &fs.PathError{Op: "write", Path: "/srv/secret/data/synapse.db", Err: syscall.ENOSPC})
	e := wire.Errorf(wire.CodeSysStorage, "store task: %v", cause)
	if strings.Contains(e.Message, "/srv/secret") || !strings.Contains(e.Message, "write synapse.db: no space left on device") {
		t.Errorf("message = %q, want the file name without its directory", e.Message)
	}
}
