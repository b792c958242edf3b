package peer_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/peer"
)

// lockedBuffer is a bytes.Buffer safe for a logger and a test together.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRegistryWithoutToken: a registry URL without a token is refused by
// the registry, and the warning says which token is missing.
func TestRegistryWithoutToken(t *testing.T) {
	r := startPeer(t, "registry")
	var logs lockedBuffer
	startPeerNode(t, peernode.Options{Name: "edge", Agent: agent.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))},
		Peer: peer.Options{Registry: &peer.RegistryConfig{URL: r.url(), HeartbeatIntervalSeconds: 1}}})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the edge agent's log:\n%s", logs.String())
		}
	})
	testutil.Eventually(t, 10*time.Second, "a registration warning in the log", func() bool {
		return strings.Contains(logs.String(), "registration failed")
	})
	out := logs.String()
	for _, want := range []string{"401", "registry.token_env", "registry:write", "synapse token create"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning lacks %q:\n%s", want, out)
		}
	}
}
