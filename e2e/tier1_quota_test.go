package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
	"github.com/synapse-edge/synapse/wire"
)

// Issue #29, disk budget: both overflow policies of a tier-1 quota on
// every ingest path (HTTP, WebSocket, MQTT southbound through a real
// mosquitto, synapse tier1 send), with the refusal answers, the counters
// of GET /tier1/routines and /metrics, and a kill -9 that keeps them.

// quotaConfig is an agent config with a southbound route on broker and a
// quota of maxBytes with overflow on synapse.telemetry.
func quotaConfig(t *testing.T, path, broker string, maxBytes int, overflow string) {
	t.Helper()
	writeConfig(t, path, fmt.Sprintf(`{"system_id":"plant-q","agent_id":"gw-quota",
		"tier1":{"quotas":[{"routine":"synapse.telemetry","max_bytes":%d,"overflow":%q}]},
		"mqtt":{"url":%q,"max_reconnect_ms":300,"keepalive_seconds":5,
			"southbound":[{"topic":"plant/+/temp","routine":"synapse.telemetry",
				"device_id":"{1}","seq":"$.seq","ts":"$.t","metric":"temp","value":"$.v"}]}}`, maxBytes, overflow, broker))
}

// routineState is the synapse.telemetry entry of GET /tier1/routines.
type routineState struct {
	Frames         uint64 `json:"frames"`
	Bytes          uint64 `json:"bytes"`
	MaxBytes       int64  `json:"max_bytes"`
	Overflow       string `json:"overflow"`
	DroppedFrames  uint64 `json:"dropped_frames"`
	RefusedBatches uint64 `json:"refused_batches"`
}

func telemetryState(t *testing.T, a *agentProc) routineState {
	t.Helper()
	r := a.call(http.MethodGet, prefix+"/tier1/routines", nil)
	var v struct {
		Routines []struct {
			ID     string       `json:"capability_id"`
			Stored routineState `json:"stored"`
		} `json:"routines"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
		t.Fatalf("GET /tier1/routines: %s", r)
	}
	for _, x := range v.Routines {
		if x.ID == "synapse.telemetry" {
			return x.Stored
		}
	}
	t.Fatalf("GET /tier1/routines lacks synapse.telemetry: %s", r)
	return routineState{}
}

// wsSend sends one batch on a new tier-1 WebSocket and returns the answer.
func wsSend(t *testing.T, a *agentProc, batch []byte) t1Ack {
	t.Helper()
	url := "ws" + strings.TrimPrefix(a.url(), "http") + prefix + "/tier1/stream"
	c, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + a.token}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.BinaryMessage, batch); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, m, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("answer: %v", err)
	}
	var ack t1Ack
	if err := wire.Msgpack.Unmarshal(m, &ack); err != nil {
		t.Fatalf("answer %x: %v", m, err)
	}
	return ack
}

// southboundReady publishes probe readings until the agent stored one: its
// subscription (and so its session at the broker) exists.
func southboundReady(t *testing.T, a *agentProc, pub paho.Client) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, "the probe reading stored", func() bool {
		publish(t, pub, "plant/probe/temp", []byte(`{"seq":0,"t":1800000000000000000,"v":0}`))
		return len(storedSeqs(t, a, "probe")) > 0
	})
}

func reading(dev string, seq int) (string, []byte) {
	return "plant/" + dev + "/temp", fmt.Appendf(nil, `{"seq":%d,"t":%d,"v":%d}`, seq, 1_800_000_000_000_000_000+int64(seq)*1_000_000, seq)
}

// TestTier1QuotaRejectNew: a full reject_new quota refuses on every path
// with storage_quota_exceeded, retriable, and stores nothing of the
// refused: HTTP 507 with Retry-After, the WebSocket's answer, the CLI's
// exit 1 naming the code, and an MQTT message left unacknowledged, which
// the broker keeps and delivers again once the agent restarts with room.
func TestTier1QuotaRejectNew(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	cfg := filepath.Join(t.TempDir(), "quota.json")
	const quota = 64 << 10
	quotaConfig(t, cfg, broker.URL(), quota, "reject_new")
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	pub := devicePublisher(t, broker.Addr, "dev-pub")
	southboundReady(t, a, pub)

	// HTTP: fill the quota until the first refusal.
	var refusal response
	accepted := 0
	for b := 0; ; b++ {
		if b > 1000 {
			t.Fatal("1000 batches of 100 frames fit in 64 KiB")
		}
		r := a.call(http.MethodPost, prefix+"/tier1/synapse.telemetry", t1Batch(fmt.Sprintf("h-%d", b), "http", b*100, 100), "Content-Type", wire.ContentMsgpack)
		if r.status == http.StatusOK {
			accepted++
			continue
		}
		refusal = r
		break
	}
	var body wire.ErrorBody
	if err := json.Unmarshal(refusal.body, &body); err != nil || refusal.status != http.StatusInsufficientStorage ||
		body.Error.Code != wire.CodeStorageQuota || !body.Error.Retriable || refusal.header.Get("Retry-After") == "" ||
		body.Error.Details["limit"] != "max_bytes" || body.Error.Details["routine"] != "synapse.telemetry" {
		t.Fatalf("refusal over the quota: %s (Retry-After %q), want 507 storage_quota_exceeded, retriable, limit max_bytes", refusal, refusal.header.Get("Retry-After"))
	}
	t.Logf("HTTP: %d batches of 100 frames accepted, then %s", accepted, refusal)
	// One-frame batches fill what is left, until refused too.
	for b := 0; ; b++ {
		if b > 1000 {
			t.Fatal("1000 one-frame batches fit in what 100 frames did not")
		}
		r := a.call(http.MethodPost, prefix+"/tier1/synapse.telemetry", t1Batch(fmt.Sprintf("s-%d", b), "http", 1_000_000+b, 1), "Content-Type", wire.ContentMsgpack)
		if r.status == http.StatusInsufficientStorage {
			break
		}
		if r.status != http.StatusOK {
			t.Fatalf("one-frame batch %d: %s", b, r)
		}
	}
	before := telemetryState(t, a)
	if before.Bytes > quota || before.Overflow != "reject_new" || before.MaxBytes != quota || before.RefusedBatches != 2 || before.DroppedFrames != 0 {
		t.Errorf("routine state %+v, want at most %d bytes, reject_new, 2 refused, 0 dropped", before, quota)
	}

	// WebSocket: the answer carries the error.
	ack := wsSend(t, a, t1Batch("ws-1", "ws", 0, 100))
	if ack.OK || ack.Error == nil || ack.Error.Code != wire.CodeStorageQuota || !ack.Error.Retriable || ack.Error.Details["batch_id"] != "ws-1" {
		t.Errorf("WebSocket answer %+v, want ok false with a retriable storage_quota_exceeded naming ws-1", ack)
	}

	// The CLI sender reports it and exits 1.
	code, out, errOut := runCLI(t, time.Minute, "tier1", "send", "--agent", a.url(), "--token", a.token, "--frames", "100", "--batch", "50")
	if code != 1 || !strings.Contains(out+errOut, string(wire.CodeStorageQuota)) {
		t.Errorf("tier1 send: exit %d, want 1 naming %s\nstdout:\n%s\nstderr:\n%s", code, wire.CodeStorageQuota, out, errOut)
	}

	// MQTT: the reading is not acknowledged to the broker.
	topic, payload := reading("mq", 1)
	publish(t, pub, topic, payload)
	defer func() {
		if t.Failed() {
			t.Logf("metrics: %s", grepMetrics(a, "synapse_mqtt_southbound", "synapse_tier1"))
		}
	}()
	testutil.Eventually(t, 30*time.Second, "the southbound reading left unacknowledged", func() bool {
		return metricValue(t, a, "synapse_mqtt_southbound_failed_total") >= 1
	})
	st := telemetryState(t, a)
	if st.Frames != before.Frames || st.Bytes != before.Bytes || st.DroppedFrames != 0 || st.RefusedBatches < 6 {
		t.Errorf("after the refusals: %+v, want %d frames as before, none dropped, at least 6 refused (2 HTTP, WS, 2 CLI, MQTT)", st, before.Frames)
	}
	if got := metricValue(t, a, `synapse_tier1_quota_refused_batches_total{routine="synapse.telemetry"}`); got != float64(st.RefusedBatches) {
		t.Errorf("metric of refusals %v, route %d", got, st.RefusedBatches)
	}
	if seqs := storedSeqs(t, a, "mq"); len(seqs) != 0 {
		t.Errorf("the refused reading was stored: %v", seqs)
	}

	// kill -9, and a restart with room: the stored totals are as they
	// were, and the broker delivers the reading it kept.
	a.kill()
	quotaConfig(t, cfg, broker.URL(), 4*quota, "reject_new")
	a.start()
	after := telemetryState(t, a)
	if after.Frames < before.Frames || after.DroppedFrames != 0 || after.MaxBytes != 4*quota {
		t.Errorf("after kill -9: %+v, want the %d frames kept, 0 dropped, max_bytes %d", after, before.Frames, 4*quota)
	}
	testutil.Eventually(t, 60*time.Second, "the kept reading redelivered and stored", func() bool {
		return len(storedSeqs(t, a, "mq")) == 1
	})
	if r := a.call(http.MethodPost, prefix+"/tier1/synapse.telemetry", t1Batch("h-after", "http", 2_000_000, 100), "Content-Type", wire.ContentMsgpack); r.status != http.StatusOK {
		t.Errorf("with room: %s", r)
	}
}

// TestTier1QuotaDropOldest: a drop_oldest quota takes every batch on
// every path, holds the routine within max_bytes by dropping its oldest
// frames, and counts them: stored + dropped = sent, exactly, in the route
// and in /metrics, logged, and still so after a kill -9.
func TestTier1QuotaDropOldest(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	cfg := filepath.Join(t.TempDir(), "quota.json")
	const quota = 32 << 10
	quotaConfig(t, cfg, broker.URL(), quota, "drop_oldest")
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	pub := devicePublisher(t, broker.Addr, "dev-pub")
	southboundReady(t, a, pub)
	sent := 1 // the probe

	check := func(what string) routineState {
		t.Helper()
		st := telemetryState(t, a)
		if st.Bytes > quota {
			t.Errorf("after %s: %d bytes stored, over max_bytes %d", what, st.Bytes, quota)
		}
		return st
	}
	for b := range 30 {
		if r := a.call(http.MethodPost, prefix+"/tier1/synapse.telemetry", t1Batch(fmt.Sprintf("h-%d", b), "http", b*100, 100), "Content-Type", wire.ContentMsgpack); r.status != http.StatusOK {
			t.Fatalf("HTTP batch %d: %s", b, r)
		}
		sent += 100
	}
	check("HTTP")
	for b := range 10 {
		if ack := wsSend(t, a, t1Batch(fmt.Sprintf("w-%d", b), "ws", b*100, 100)); !ack.OK {
			t.Fatalf("WebSocket batch %d: %+v", b, ack)
		}
		sent += 100
	}
	check("WebSocket")
	if code, out, errOut := runCLI(t, time.Minute, "tier1", "send", "--agent", a.url(), "--token", a.token, "--frames", "1000", "--batch", "100"); code != 0 {
		t.Fatalf("tier1 send: exit %d\n%s%s", code, out, errOut)
	}
	sent += 1000
	check("tier1 send")
	const readings = 200
	for i := range readings {
		topic, payload := reading("mq", i)
		publish(t, pub, topic, payload)
	}
	sent += readings
	testutil.Eventually(t, 60*time.Second, "the southbound readings stored", func() bool {
		return metricValue(t, a, "synapse_mqtt_southbound_stored_total") >= readings+1
	})
	st := check("MQTT")
	if st.DroppedFrames == 0 || st.Frames+st.DroppedFrames != uint64(sent) || st.RefusedBatches != 0 {
		t.Errorf("stored %d + dropped %d frames (refused %d), want %d sent, some dropped, none refused", st.Frames, st.DroppedFrames, st.RefusedBatches, sent)
	}
	if got := metricValue(t, a, `synapse_tier1_dropped_frames_total{routine="synapse.telemetry"}`); got != float64(st.DroppedFrames) {
		t.Errorf("metric of drops %v, route %d", got, st.DroppedFrames)
	}
	if n := strings.Count(a.stderr(), "tier1: frames dropped"); n == 0 || n > 20 {
		t.Errorf("%d drop lines for %d frames dropped, want a few (first, then powers of two)", n, st.DroppedFrames)
	}
	t.Logf("%d frames sent over four paths: %d kept in %d bytes, %d dropped", sent, st.Frames, st.Bytes, st.DroppedFrames)

	a.kill()
	a.start()
	after := telemetryState(t, a)
	if after.Frames != st.Frames || after.DroppedFrames != st.DroppedFrames || after.Bytes != st.Bytes {
		t.Errorf("after kill -9: %+v, want %+v", after, st)
	}
	if got := metricValue(t, a, `synapse_tier1_dropped_frames_total{routine="synapse.telemetry"}`); got != float64(st.DroppedFrames) {
		t.Errorf("after kill -9 the metric of drops is %v, want %d", got, st.DroppedFrames)
	}
}

// grepMetrics is the lines of a's /metrics that hold one of names.
func grepMetrics(a *agentProc, names ...string) string {
	var out []string
	for _, l := range strings.Split(string(a.call(http.MethodGet, "/metrics", nil).body), "\n") {
		for _, n := range names {
			if strings.HasPrefix(l, n) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
