package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// dirEntry is what this test reads of a directory entry.
type dirEntry struct {
	AgentID   string `json:"agent_id"`
	Endpoint  string `json:"endpoint"`
	PublicKey string `json:"public_key"`
	Status    string `json:"status"`
	Source    string `json:"source"`
}

// TestMQTTDirectory: an agent's GET /agents?capability= lists the agents
// whose cards are on its broker (source "mqtt"); one whose link vanishes
// (SIGSTOP: the socket stays open, only the keep-alive can tell) shows
// offline once the broker's keep-alive check fires, one killed with -9
// within the keep-alive × 1.5 (at once, in fact); one
// found there pairs by its endpoint and its pinned key is the card's.
func TestMQTTDirectory(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	const keepalive = 2 * time.Second
	start := func(id string) *agentProc {
		cfg := filepath.Join(t.TempDir(), id+".json")
		writeJSON(t, cfg, map[string]any{"agent_id": id, "system_id": "plant-a", "endpoint": "mqtt:///" + id,
			"mqtt": map[string]any{"url": broker.URL(), "keepalive_seconds": int(keepalive / time.Second), "max_reconnect_ms": 300}})
		return startAgent(t, agentOpts{args: []string{"--config", cfg}})
	}
	obs, gw := start("gw-obs"), start("gw-d")

	find := func(query string) (dirEntry, bool) {
		t.Helper()
		r := obs.call(http.MethodGet, prefix+"/agents?"+query, nil)
		var v struct{ Agents []dirEntry }
		if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil {
			t.Fatalf("GET /agents?%s: %s", query, r)
		}
		for _, e := range v.Agents {
			if e.AgentID == "gw-d" {
				return e, true
			}
		}
		return dirEntry{}, false
	}
	waitStatus := func(status string, within time.Duration) time.Duration {
		t.Helper()
		began := time.Now()
		for time.Since(began) < within {
			if e, ok := find("capability=echo"); ok && e.Status == status {
				return time.Since(began)
			}
			time.Sleep(pollEvery)
		}
		e, _ := find("capability=echo")
		t.Fatalf("after %s gw-d is %+v in the directory, want %s", within, e, status)
		return 0
	}
	// kill -9: the kernel closes the socket, the broker publishes the Last
	// Will at once; allow mosquitto's whole-second clock on top.
	limit := keepalive*3/2 + time.Second
	// A vanished link: mosquitto 2.0 compares whole seconds and sweeps
	// its clients' keep-alives once every 5 s, so the Will comes up to 6 s
	// after the keep-alive × 1.5 (measured: 4.9-5.8 s with 2 s).
	vanishedLimit := limit + 5*time.Second

	waitStatus("online", 10*time.Second)
	e, _ := find("capability=echo&status=online")
	if e.Source != "mqtt" || e.Endpoint != "mqtt:///gw-d" || e.PublicKey == "" {
		t.Fatalf("gw-d in the directory: %+v", e)
	}
	if _, ok := find("capability=no-such-capability"); ok {
		t.Fatal("gw-d matched a capability it does not have")
	}

	// A vanished link: the process stops, its socket stays open.
	if err := syscall.Kill(gw.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	took := waitStatus("offline", 15*time.Second)
	t.Logf("offline %v after SIGSTOP (keep-alive %v)", took.Round(time.Millisecond), keepalive)
	if took > vanishedLimit {
		t.Errorf("offline %v after the link vanished, want within %v", took, vanishedLimit)
	}
	if err := syscall.Kill(gw.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitStatus("online", 15*time.Second)

	gw.kill()
	took = waitStatus("offline", 10*time.Second)
	t.Logf("offline %v after kill -9", took.Round(time.Millisecond))
	if took > limit {
		t.Errorf("offline %v after kill -9, want within %v", took, limit)
	}

	// Pairing one found there: by the endpoint the card gives; the key
	// pinned is the card's.
	gw.start()
	waitStatus("online", 10*time.Second)
	e, _ = find("capability=echo")
	pairOverBroker(t, obs, e.Endpoint)
	r := obs.call(http.MethodGet, prefix+"/agents/gw-d", nil)
	var p struct {
		PublicKey string `json:"public_key"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &p) != nil || p.PublicKey != e.PublicKey {
		t.Fatalf("paired gw-d: %s; card key %s", r, e.PublicKey)
	}
	if e2, ok := find("capability=echo"); !ok || e2.PublicKey != p.PublicKey {
		t.Fatalf("after pairing gw-d is %+v in the directory", e2)
	}
}
