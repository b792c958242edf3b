package e2e_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// t1Batch encodes frames first..first+n-1 of device dev; seq is the frame
// number, ts grows with it.
func t1Batch(id, dev string, first, n int) []byte {
	d := tier1.Telemetry()
	fs := make([]tier1.Frame, n)
	for i := range fs {
		seq := first + i
		fs[i] = tier1.Frame{tier1.Str(dev), tier1.Uint(uint64(seq)), tier1.Int(1_800_000_000_000_000_000 + int64(seq)*1000),
			tier1.Str("temp"), tier1.Float(float64(seq) / 4), tier1.Str("C")}
	}
	return tier1.AppendBatch(nil, d.CapabilityID, d.Version, id, fs, &d)
}

// ingestT1 posts batches from..from+batches-1 to a, each of perBatch
// frames of device dev (batch b holds seqs b*perBatch onwards, id d-b).
func ingestT1(t *testing.T, a *agentProc, dev string, from, batches, perBatch int) {
	t.Helper()
	for b := from; b < from+batches; b++ {
		r := a.call("POST", "/api/v1/synapse/tier1/synapse.telemetry", t1Batch(fmt.Sprintf("d-%d", b), dev, b*perBatch, perBatch),
			"Content-Type", wire.ContentMsgpack)
		if r.status != http.StatusOK {
			t.Fatalf("ingest batch %d: %v", b, r)
		}
	}
}

// waitStoredFrames waits up to 60 s until a holds at least n frames of
// dev.
func waitStoredFrames(t *testing.T, a *agentProc, dev string, n int) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, fmt.Sprintf("%d frames of %s stored", n, dev), func() bool {
		return len(storedSeqs(t, a, dev)) >= n
	})
}

// storedSeqs reads every stored frame of dev and returns its seqs in the
// order returned.
func storedSeqs(t *testing.T, a *agentProc, dev string) []int {
	t.Helper()
	var seqs []int
	tok := ""
	for range 10_000 {
		q := "/api/v1/synapse/tier1/synapse.telemetry/frames?limit=10000&device_id=" + dev
		if tok != "" {
			q += "&page_token=" + tok
		}
		r := a.call("GET", q, nil)
		if r.status != http.StatusOK {
			t.Fatalf("frames: %v", r)
		}
		var page struct {
			Frames []struct {
				Seq int `json:"seq"`
			} `json:"frames"`
			Next string `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatalf("frames page: %v", err)
		}
		for _, f := range page.Frames {
			seqs = append(seqs, f.Seq)
		}
		if page.Next == "" {
			return seqs
		}
		tok = page.Next
	}
	t.Fatal("too many pages")
	return nil
}

// checkOnceInOrder fails unless seqs is exactly 0..n-1.
func checkOnceInOrder(t *testing.T, seqs []int, n int) {
	t.Helper()
	if len(seqs) != n {
		t.Errorf("%d frames stored, want %d", len(seqs), n)
	}
	for i, s := range seqs {
		if s != i {
			t.Fatalf("frame %d has seq %d: lost, duplicated or out of order", i, s)
		}
	}
}

type t1Ack struct {
	OK      bool        `msgpack:"ok"`
	BatchID string      `msgpack:"batch_id"`
	Error   *wire.Error `msgpack:"error"`
}

// TestTier1KillDuringIngest streams batches over the WebSocket while the
// agent is killed with SIGKILL several times. A client resends, with the
// same batch_id, every batch it holds no acknowledgement for. In the end
// every frame is stored exactly once, and nothing of a refused batch is.
func TestTier1KillDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("sustained ingest under SIGKILL; skipped with -short")
	}
	a := startAgent(t, agentOpts{})
	const perBatch, kills = 100, 4
	acked := map[int]bool{} // batch number → acknowledged
	next := 0               // batches made so far
	for round := 0; round <= kills; round++ {
		hdr := http.Header{"Authorization": {"Bearer " + a.token}}
		url := "ws" + strings.TrimPrefix(a.url(), "http") + "/api/v1/synapse/tier1/stream"
		c, _, err := websocket.DefaultDialer.Dial(url, hdr)
		if err != nil {
			t.Fatalf("round %d: dial: %v", round, err)
		}
		// Resend the unacknowledged batches first, then new ones.
		var pending []int
		for b := range next {
			if !acked[b] {
				pending = append(pending, b)
			}
		}
		var mu sync.Mutex
		readDone := make(chan struct{})
		go func() {
			defer close(readDone)
			for {
				_, m, err := c.ReadMessage()
				if err != nil {
					return
				}
				var ack t1Ack
				if err := wire.Msgpack.Unmarshal(m, &ack); err != nil {
					t.Errorf("ack: %v", err)
					return
				}
				if !ack.OK {
					if !strings.HasPrefix(ack.BatchID, "bad-") && ack.Error != nil && ack.Error.Code != wire.CodeInvalidParams {
						t.Errorf("ack error for %s: %v", ack.BatchID, ack.Error)
					}
					continue
				}
				var b int
				if _, err := fmt.Sscanf(ack.BatchID, "b-%d", &b); err == nil {
					mu.Lock()
					acked[b] = true
					mu.Unlock()
				}
			}
		}()
		stop := time.Now().Add(time.Duration(300+rand.IntN(500)) * time.Millisecond)
		last := round == kills
		if last {
			stop = time.Now().Add(500 * time.Millisecond)
		}
		send := func(b []byte) bool { return c.WriteMessage(websocket.BinaryMessage, b) == nil }
		ok := true
		for _, b := range pending {
			if ok = send(t1Batch(fmt.Sprintf("b-%d", b), "k", b*perBatch, perBatch)); !ok {
				break
			}
		}
		for ok && time.Now().Before(stop) && next < 5000 {
			b := next
			next++
			if ok = send(t1Batch(fmt.Sprintf("b-%d", b), "k", b*perBatch, perBatch)); !ok {
				break
			}
			if b%50 == 7 { // a refused batch: a string where a float belongs
				d := tier1.Telemetry()
				bad := tier1.AppendBatch(nil, d.CapabilityID, d.Version, fmt.Sprintf("bad-%d", b), []tier1.Frame{
					{tier1.Str("bad"), tier1.Uint(1), tier1.Int(1), tier1.Str("m"), tier1.Str("x"), tier1.Str("u")}}, nil)
				ok = send(bad)
			}
		}
		if last {
			// Close our side and wait for every answer.
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			select {
			case <-readDone:
			case <-time.After(30 * time.Second):
				t.Fatal("acknowledgements did not arrive")
			}
			c.Close()
			break
		}
		a.kill()
		<-readDone
		c.Close()
		a.start()
	}
	// Batches still unacknowledged after the last round (the close raced
	// their answers) are sent once more over HTTP.
	for b := range next {
		if !acked[b] {
			r := a.call("POST", "/api/v1/synapse/tier1/synapse.telemetry", t1Batch(fmt.Sprintf("b-%d", b), "k", b*perBatch, perBatch),
				"Content-Type", wire.ContentMsgpack)
			if r.status != http.StatusOK {
				t.Fatalf("resend b-%d: %v", b, r)
			}
		}
	}
	t.Logf("%d batches of %d frames over %d kills", next, perBatch, kills)
	checkOnceInOrder(t, storedSeqs(t, a, "k"), next*perBatch)
	if bad := storedSeqs(t, a, "bad"); len(bad) != 0 {
		t.Errorf("%d frames of refused batches were stored", len(bad))
	}
}

// TestTier1Uplink: the upstream is down while the downstream ingests, then
// comes up; every frame arrives once and in order. Then both sides restart
// in the middle of a second phase, and still every frame arrives once.
func TestTier1Uplink(t *testing.T) {
	up := newAgent(t, agentOpts{})
	cfg := filepath.Join(t.TempDir(), "down.json")
	conf := fmt.Sprintf(`{"uplink":{"endpoint":"http://%s","token_env":"UPLINK_TOKEN","max_backoff_ms":200}}`, up.Addr)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	down := startAgent(t, agentOpts{args: []string{"--config", cfg}, env: []string{"UPLINK_TOKEN=" + up.token}})
	ingest := func(from, batches int) { t.Helper(); ingestT1(t, down, "u", from, batches, 50) }
	waitFrames := func(n int) { t.Helper(); waitStoredFrames(t, up, "u", n) }

	ingest(0, 40) // upstream down all along
	down.kill()   // and the downstream restarts while it waits
	down.start()
	up.start()
	waitFrames(2000)
	checkOnceInOrder(t, storedSeqs(t, up, "u"), 2000)

	// Phase 2: restart the upstream, and the downstream, mid-stream.
	ingest(40, 20)
	up.kill()
	ingest(60, 20)
	down.kill()
	down.start()
	up.start()
	ingest(80, 20)
	waitFrames(5000)
	checkOnceInOrder(t, storedSeqs(t, up, "u"), 5000)
	checkOnceInOrder(t, storedSeqs(t, down, "u"), 5000)
}
