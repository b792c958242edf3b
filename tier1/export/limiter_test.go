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

// TestSetCapsLive: a reload's caps take effect on a running export: a
// backlog held to 5 kB/s by its own cap and the global one goes much
// faster once both are raised, and slow again once its own is lowered
// (after the one window read under the fast cap); the status shows the
// cap in force.
func TestSetCapsLive(t *testing.T) {
	a := openAgent(t, "")
	defer a.close()
	up := newUpstream()
	a.in.EnableOutbox()
	for i := range 400 {
		a.ingest("d", uint64(i*100), 50) // ~2 kB a batch
	}
	s, stop := a.start(up, 5_000, export.Config{Name: "x", Endpoint: "http://127.0.0.1:1", BandwidthBytesPerS: 5_000, Start: "all"})
	defer stop()
	sentIn := func(d time.Duration) uint64 {
		before := status(s, "x").SentBytes
		time.Sleep(d)
		return status(s, "x").SentBytes - before
	}
	slow := sentIn(2 * time.Second)
	s.SetCaps(200_000, map[string]int64{"x": 100_000})
	if st := status(s, "x"); st.BandwidthBytesPerS != 100_000 {
		t.Errorf("status shows a cap of %d after SetCaps, want 100000", st.BandwidthBytesPerS)
	}
	fast := sentIn(2 * time.Second)
	s.SetCaps(0, map[string]int64{"x": 2_000})
	again := sentIn(4 * time.Second)
	t.Logf("%d B in 2 s at 5 kB/s, %d B in 2 s at 100 kB/s, %d B in 4 s at 2 kB/s", slow, fast, again)
	if slow > 5_000*2*1.1+5_000 {
		t.Errorf("%d B in 2 s under a cap of 5 kB/s", slow)
	}
	if fast < 4*slow {
		t.Errorf("%d B in 2 s after raising the caps twentyfold, %d before: the new cap is not in force", fast, slow)
	}
	// A window read under the fast cap (half a second of it) still goes;
	// then the lowered cap holds.
	if again > 50_000+2_000*4*1.1+2_000 {
		t.Errorf("%d B in 4 s after lowering the cap to 2 kB/s", again)
	}
}
