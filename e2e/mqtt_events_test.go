package e2e_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// TestMQTTTaskEvents: with "task_events": true, a plain MQTT subscriber
// on {prefix}/{system_id}/{agent_id}/events follows a task from submitted
// to completed, as JSON: status_update events in seq order and the
// complete event, the same ones GET /task/{id}/events lists.
func TestMQTTTaskEvents(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	type event struct {
		TaskID string          `json:"task_id"`
		Seq    uint64          `json:"seq"`
		Type   string          `json:"event_type"`
		Data   json.RawMessage `json:"data"`
	}
	var mu sync.Mutex
	var got []event
	var bad []string
	o := paho.NewClientOptions().AddBroker("tcp://" + broker.Addr).SetClientID("cloud").
		SetOnConnectHandler(func(c paho.Client) {
			c.Subscribe("synapse/plant-a/gw-e/events", 1, func(_ paho.Client, m paho.Message) {
				mu.Lock()
				defer mu.Unlock()
				var e event
				if err := json.Unmarshal(m.Payload(), &e); err != nil {
					bad = append(bad, string(m.Payload()))
					return
				}
				got = append(got, e)
			}).Wait()
		})
	cloud := paho.NewClient(o)
	if tok := cloud.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber connect: %v", tok.Error())
	}
	defer cloud.Disconnect(100)

	cfg := filepath.Join(t.TempDir(), "e.json")
	writeJSON(t, cfg, map[string]any{"agent_id": "gw-e", "system_id": "plant-a",
		"mqtt": map[string]any{"url": broker.URL(), "max_reconnect_ms": 300, "task_events": true}})
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	r := a.call(http.MethodPost, prefix+"/task?wait=30", []byte(`{"task_type":"echo","payload":{"n":1}}`))
	var v taskView
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || v.Status != "completed" {
		t.Fatalf("POST /task?wait=30: %s", r)
	}
	testutil.Eventually(t, 10*time.Second, "the complete event on the broker", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && got[len(got)-1].Type == "complete"
	})
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Fatalf("payloads that are not JSON: %q", bad)
	}
	var last struct {
		Status string `json:"status"`
	}
	for i, e := range got {
		if e.TaskID != v.TaskID || (i > 0 && e.Seq <= got[i-1].Seq) {
			t.Fatalf("event %d: %+v (task %s); events must be of the task, in seq order", i, e, v.TaskID)
		}
		if e.Type == "status_update" {
			if err := json.Unmarshal(e.Data, &last); err != nil {
				t.Fatalf("status_update data %s: %v", e.Data, err)
			}
		}
	}
	if len(got) < 3 || last.Status != "completed" {
		t.Fatalf("events %+v; want status updates up to completed, then complete", got)
	}
}
