package e2e_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// TestHostileIdleWebSocketsRelease (issue #15, item 7): 30 tier-1
// WebSockets each send one 4 MiB message, get its answer, and stay open
// doing nothing. The agent's resident memory must come back to within 32
// MiB of where it was before, while they stay open.
func TestHostileIdleWebSocketsRelease(t *testing.T) {
	const (
		conns    = 30
		size     = 4<<20 - 64
		maxGrow  = 32 << 20
		settleIn = 20 * time.Second
	)
	if os.Getenv("SYNAPSE_E2E_RACE") == "1" {
		t.Skip("resident memory of a -race binary is not the product's")
	}
	a := startAgent(t, agentOpts{})
	pid := a.pid()
	before := rssBytes(t, pid)
	url := "ws" + strings.TrimPrefix(a.url(), "http") + prefix + "/tier1/stream"
	hdr := http.Header{"Authorization": {"Bearer " + a.token}}
	msg := bytes.Repeat([]byte{0xc0}, size) // 4 MiB of msgpack nils: refused, but read whole
	for i := range conns {
		c, _, err := websocket.DefaultDialer.Dial(url, hdr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	peak := rssBytes(t, pid)
	deadline := time.Now().Add(settleIn)
	now := peak
	for now-before >= maxGrow && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond) // polling the process from outside
		now = rssBytes(t, pid)
	}
	t.Logf("VmRSS %d KiB before, %d KiB after %d messages, %d KiB with the connections idle", before>>10, peak>>10, conns, now>>10)
	if now-before >= maxGrow {
		t.Errorf("%d idle connections hold %d KiB more than before, want under %d KiB", conns, (now-before)>>10, maxGrow>>10)
	}
}
