package e2e_test

import (
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// TestMQTTPresence: an agent's retained card says online, signed by its
// key; killed with -9, the broker's Last Will turns it offline within the
// keep-alive × 1.5; a clean stop turns it offline at once.
func TestMQTTPresence(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	const keepalive = 2 * time.Second
	cfg := filepath.Join(t.TempDir(), "p.json")
	writeJSON(t, cfg, map[string]any{"agent_id": "gw-p", "system_id": "plant-a", "endpoint": "mqtt:///gw-p",
		"mqtt": map[string]any{"url": broker.URL(), "keepalive_seconds": int(keepalive / time.Second), "max_reconnect_ms": 300}})

	var mu sync.Mutex
	var cards []*mqtt.Card
	var at []time.Time
	var bad []error
	o := paho.NewClientOptions().AddBroker("tcp://" + broker.Addr).SetClientID("directory").
		SetOnConnectHandler(func(c paho.Client) {
			c.Subscribe("synapse/agents/+/card", 1, func(_ paho.Client, m paho.Message) {
				_, card, err := mqtt.ParseCard(m.Payload())
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					bad = append(bad, err)
					return
				}
				cards, at = append(cards, card), append(at, time.Now())
			})
		})
	dir := paho.NewClient(o)
	if tok := dir.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("directory connect: %v", tok.Error())
	}
	defer dir.Disconnect(100)
	last := func() (*mqtt.Card, time.Time, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("cards that do not verify: %v", bad)
		}
		if len(cards) == 0 {
			return nil, time.Time{}, 0
		}
		return cards[len(cards)-1], at[len(at)-1], len(cards)
	}
	waitStatus := func(status string, within time.Duration) time.Time {
		t.Helper()
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			if c, when, _ := last(); c != nil && c.Status == status {
				return when
			}
			time.Sleep(pollEvery)
		}
		c, _, n := last()
		t.Fatalf("after %s the card is %+v (%d cards), want %s", within, c, n, status)
		return time.Time{}
	}

	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	waitStatus(mqtt.CardOnline, 10*time.Second)
	if c, _, _ := last(); c.Endpoint != "mqtt:///gw-p" || len(c.TaskTypes) == 0 || c.PublicKey == "" {
		t.Fatalf("online card %+v", c)
	}
	killed := time.Now()
	a.kill()
	offline := waitStatus(mqtt.CardOffline, 10*time.Second)
	took := offline.Sub(killed)
	t.Logf("offline %v after kill -9 (keep-alive %v)", took.Round(time.Millisecond), keepalive)
	// mosquitto checks keep-alives once a second: allow that on top.
	if limit := keepalive*3/2 + time.Second; took > limit {
		t.Errorf("offline after %v, want within %v", took, limit)
	}

	// A clean stop turns the card offline as it begins: while a running
	// task still holds the agent (its grace period), not once it exits.
	a.start()
	waitStatus(mqtt.CardOnline, 10*time.Second)
	_, id := a.submit(http.StatusCreated, `{"task_type":"sleep","payload":{"ms":8000}}`)
	a.waitTask(id, 10*time.Second, "executing", func(v taskView) bool { return v.Status == "executing" })
	stopped := make(chan int, 1)
	go func() { stopped <- a.Stop(t) }() // Stop reports with t.Errorf only
	waitStatus(mqtt.CardOffline, 5*time.Second)
	select {
	case <-a.Done():
		t.Errorf("the card turned offline only once the agent had exited, not as its stop began")
	default:
	}
	if code := <-stopped; code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	a.start()
	if v := a.task(id); v.Status != "completed" {
		t.Errorf("the task running at SIGTERM is %q after the restart, want completed within the grace period", v.Status)
	}
	a.stop()
}
