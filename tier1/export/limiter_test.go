package export_test

import (
	"testing"
	"time"

	"github.com/synapse-edge/synapse/tier1/export"
)

// TestGlobalCapPriority: under a global cap two exports with a backlog
// share it: the bytes granted stay within the cap (plus a second's
// window), the priority-1 export gets the most, and the priority-9 one
// still makes progress.
func TestGlobalCapPriority(t *testing.T) {
	a := openAgent(t, "")
	defer a.close()
	up := newUpstream()
	a.in.EnableOutbox()
	for i := range 200 {
		a.ingest("d", uint64(i*100), 50) // ~2 kB a batch
	}
	const capBps = 20_000
	t0 := time.Now()
	s, stop := a.start(up, capBps,
		export.Config{Name: "hi", Endpoint: "http://127.0.0.1:1", Priority: 1, Start: "all"},
		export.Config{Name: "lo", Endpoint: "http://127.0.0.1:2", Priority: 9, Start: "all"})
	time.Sleep(4 * time.Second)
	stop()
	el := time.Since(t0).Seconds()
	hi, lo := status(s, "hi"), status(s, "lo")
	// sent_bytes counts batch bytes; the wire adds headers: the cap is on
	// the wire, so batch bytes are below it.
	if tot := float64(hi.SentBytes + lo.SentBytes); tot > capBps*el*1.1+capBps {
		t.Errorf("%.0f bytes sent in %.1f s under a cap of %d/s", tot, el, capBps)
	}
	if hi.SentBytes <= lo.SentBytes {
		t.Errorf("priority 1 sent %d bytes, priority 9 %d", hi.SentBytes, lo.SentBytes)
	}
	if lo.SentBytes == 0 {
		t.Errorf("priority 9 made no progress in %.1f s", el)
	}
	t.Logf("%.1f s: hi %d B, lo %d B (cap %d B/s)", el, hi.SentBytes, lo.SentBytes, capBps)
}
