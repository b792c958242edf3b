package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestTier1UplinkWebSocket: with "uplink": {"endpoint": "ws://..."} the
// downstream sends its queue over the upstream's WebSocket stream, a
// window of batches in flight. Through the upstream being down at first,
// the downstream killed with -9 while windows are in flight, and the
// upstream killed and restarted mid-stream, every frame is stored once
// upstream, in order; a batch refused for good is dropped, not retried
// forever, and does not hold up the rest.
func TestTier1UplinkWebSocket(t *testing.T) {
	up := newAgent(t, agentOpts{})
	cfg := filepath.Join(t.TempDir(), "down.json")
	// The downstream knows a routine the upstream lacks: its batches are
	// refused there for good.
	conf := fmt.Sprintf(`{"uplink":{"endpoint":"ws://%s","token_env":"UPLINK_TOKEN","max_backoff_ms":200},
		"tier1":{"routines":[{"capability_id":"x.only_here","version":"1.0.0","fields":[{"name":"v","type":"int"}]}]}}`, up.Addr)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	down := startAgent(t, agentOpts{args: []string{"--config", cfg}, env: []string{"UPLINK_TOKEN=" + up.token}})
	const perBatch = 5
	ingest := func(from, batches int) { t.Helper(); ingestT1(t, down, "w", from, batches, perBatch) }
	waitFrames := func(n int) { t.Helper(); waitStoredFrames(t, up, "w", n) }

	ingest(0, 100) // upstream down all along
	if r := down.call("POST", "/api/v1/synapse/tier1/x.only_here", []byte("\x94\xabx.only_here\xa51.0.0\x91\x91\x07\xa2b1"),
		"Content-Type", wire.ContentMsgpack); r.status != http.StatusOK {
		t.Fatalf("ingest the routine the upstream lacks: %v", r)
	}
	ingest(100, 100)
	up.start()
	waitFrames(200 * perBatch)
	checkOnceInOrder(t, storedSeqs(t, up, "w"), 200*perBatch)
	if m := down.call("GET", "/metrics", nil); !strings.Contains(string(m.body), "\nsynapse_tier1_uplink_dropped_batches_total 1\n") {
		t.Errorf("the batch the upstream refuses was not dropped: %s", grepLines(string(m.body), "uplink"))
	}

	// The downstream killed while windows go out, the upstream killed
	// and restarted mid-stream.
	ingest(200, 300)
	down.kill()
	down.start()
	ingest(500, 100)
	up.kill()
	ingest(600, 100)
	up.start()
	ingest(700, 100)
	waitFrames(800 * perBatch)
	checkOnceInOrder(t, storedSeqs(t, up, "w"), 800*perBatch)
	if m := down.call("GET", "/metrics", nil); !strings.Contains(string(m.body), "\nsynapse_tier1_uplink_pending_batches 0\n") {
		t.Errorf("batches left in the queue: %s", grepLines(string(m.body), "uplink"))
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
