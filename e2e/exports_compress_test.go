package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// wireStatus is the compression part of an export's status.
type wireStatus struct {
	Name          string  `json:"name"`
	BacklogFrames uint64  `json:"backlog_frames"`
	SentFrames    uint64  `json:"sent_frames"`
	Coding        string  `json:"coding"`
	RawBytes      uint64  `json:"raw_bytes"`
	WireBytes     uint64  `json:"wire_bytes"`
	Ratio         float64 `json:"compression_ratio"`
}

// olderUpstream is an HTTP upstream of before compression: it announces
// nothing and takes plain msgpack batches only (a Content-Encoding is
// counted as a failure of the exporter and refused 415).
type olderUpstream struct {
	mu      sync.Mutex
	batches int
	encoded int
}

func (u *olderUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	defer u.mu.Unlock()
	if r.Header.Get("Content-Encoding") != "" {
		u.encoded++
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	if len(body) == 0 || body[0]&0xf0 != 0x90 { // a msgpack array
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	u.batches++
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true,"accepted":1}`))
}

// TestExportCompression (issue 29, compression on the wire), with real
// processes: agent A exports the same telemetry to B over HTTP with
// compression auto and to C with compression off, both capped at the
// same bytes per second on the wire. B announces gzip (Accept-Encoding in
// its answers), so A's batches to it go gzipped after the first: every
// frame arrives exactly once at each, the wire bytes to B are a fraction
// of the raw ones, and B gets the whole backlog through the same cap
// several times faster than C. An older-style upstream that announces
// nothing gets plain batches, though its export asks for gzip.
func TestExportCompression(t *testing.T) {
	b, c := startAgent(t, agentOpts{}), startAgent(t, agentOpts{})
	old := &olderUpstream{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: old, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	const limit = 15000 // bytes per second on the wire, each export
	cfg := fmt.Sprintf(`{"exports":[
		{"name":"z","endpoint":"http://%s","token_env":"TB","bandwidth_bytes_per_s":%d,"start":"all","max_backoff_ms":200},
		{"name":"p","endpoint":"http://%s","token_env":"TC","bandwidth_bytes_per_s":%d,"start":"all","compression":"off","max_backoff_ms":200},
		{"name":"old","endpoint":"http://%s","start":"all","compression":"gzip","max_backoff_ms":200}]}`,
		b.Addr, limit, c.Addr, limit, ln.Addr())
	p := filepath.Join(t.TempDir(), "a.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, agentOpts{args: []string{"--config", p}, env: []string{"TB=" + b.token, "TC=" + c.token}})
	hc := newClient(1, 5*time.Second)
	defer hc.CloseIdleConnections()
	status := func() map[string]wireStatus {
		t.Helper()
		r, err := a.send(t.Context(), hc, "GET", "/api/v1/synapse/tier1/exports", nil)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("GET /tier1/exports: %v %v", err, r)
		}
		var st struct{ Exports []wireStatus }
		if err := json.Unmarshal(r.body, &st); err != nil {
			t.Fatal(err)
		}
		m := map[string]wireStatus{}
		for _, e := range st.Exports {
			m[e.Name] = e
		}
		return m
	}

	const batches, per = 40, 100 // 4,000 frames, ~170 kB raw: ~11 s plain at the cap
	start := time.Now()
	ingestT1(t, a, "h", 0, batches, per)
	var tz time.Duration
	testutil.Eventually(t, 60*time.Second, "B has all", func() bool { return status()["z"].BacklogFrames == 0 })
	tz = time.Since(start)
	pAtZ := status()["p"].SentFrames
	testutil.Eventually(t, 90*time.Second, "C has all", func() bool { return status()["p"].BacklogFrames == 0 })
	tp := time.Since(start)
	st := status()
	z, pl := st["z"], st["p"]
	t.Logf("same cap %d B/s: compressed %d frames in %v (%.0f frames/s), plain %d in %v (%.0f frames/s); plain had %d when compressed was done",
		limit, z.SentFrames, tz.Round(time.Millisecond), float64(z.SentFrames)/tz.Seconds(),
		pl.SentFrames, tp.Round(time.Millisecond), float64(pl.SentFrames)/tp.Seconds(), pAtZ)
	t.Logf("z: coding %s, raw %d, wire %d, ratio %.2f; p: coding %s, raw %d, wire %d", z.Coding, z.RawBytes, z.WireBytes, z.Ratio, pl.Coding, pl.RawBytes, pl.WireBytes)
	if z.Coding != "gzip" || pl.Coding != "identity" {
		t.Errorf("codings %q and %q, want gzip (B announces it) and identity (off)", z.Coding, pl.Coding)
	}
	if z.WireBytes*2 > z.RawBytes {
		t.Errorf("compressed export: %d wire bytes for %d raw, want under half", z.WireBytes, z.RawBytes)
	}
	if pl.WireBytes != pl.RawBytes {
		t.Errorf("plain export: %d wire bytes for %d raw", pl.WireBytes, pl.RawBytes)
	}
	if pAtZ*2 > batches*per || tz*2 > tp {
		t.Errorf("compression did not let more frames through the same cap: done in %v against %v; plain had sent %d", tz, tp, pAtZ)
	}
	checkOnceInOrder(t, storedSeqs(t, b, "h"), batches*per)
	checkOnceInOrder(t, storedSeqs(t, c, "h"), batches*per)

	testutil.Eventually(t, 30*time.Second, "the older upstream has all", func() bool { return status()["old"].BacklogFrames == 0 })
	old.mu.Lock()
	defer old.mu.Unlock()
	if old.batches != batches || old.encoded != 0 {
		t.Errorf("older upstream: %d plain batches, %d compressed, want %d and 0", old.batches, old.encoded, batches)
	}
	if o := status()["old"]; o.Coding != "identity" || o.WireBytes != o.RawBytes {
		t.Errorf("export to the older upstream: %+v, want plain", o)
	}
}
