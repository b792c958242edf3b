package e2e_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// devicePublisher is an independent MQTT client, as a device or a
// mosquitto_pub would be: it publishes at QoS 1 and waits for each PUBACK.
func devicePublisher(t *testing.T, addr, id string) paho.Client {
	t.Helper()
	o := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).SetCleanSession(true)
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("publisher connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c
}

func publish(t *testing.T, c paho.Client, topic string, payload []byte) {
	t.Helper()
	if tok := c.Publish(topic, 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Errorf("publish %s: %v", topic, tok.Error())
	}
}

// metricValue reads one counter from the agent's /metrics (0 when absent).
func metricValue(t *testing.T, a *agentProc, name string) float64 {
	t.Helper()
	r := a.call("GET", "/metrics", nil)
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestMQTTSouthbound: 10,000 readings published at QoS 1 by independent
// MQTT clients to device topics are stored as tier-1 frames exactly once
// and read back through /tier1/{id}/frames, while the agent is killed
// (kill -9) mid-stream with messages in flight (the broker delivers again
// what was not acknowledged; what was stored but not acknowledged is
// recognised by its batch_id), publishers send duplicates, and bad
// messages are mixed in.
func TestMQTTSouthbound(t *testing.T) {
	const devices, perDevice = 10, 1000
	broker := mqtttest.Start(t, mqtttest.Options{})
	cfg := filepath.Join(t.TempDir(), "mqtt.json")
	conf := fmt.Sprintf(`{"system_id":"plant-a","agent_id":"gw-south",
		"mqtt":{"url":%q,"max_reconnect_ms":300,"keepalive_seconds":5,
			"southbound":[{"topic":"plant/+/temp","routine":"synapse.telemetry",
				"device_id":"{1}","seq":"$.seq","ts":"$.t","metric":"temp","value":"$.v"}]}}`, broker.URL())
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	defer func() {
		if t.Failed() {
			t.Logf("metrics: %s", a.call("GET", "/metrics", nil).body)
			t.Logf("broker: %s", broker.Log())
		}
	}()
	reading := func(dev, seq int) (string, []byte) {
		return fmt.Sprintf("plant/dev-%02d/temp", dev),
			fmt.Appendf(nil, `{"seq":%d,"t":%d,"v":%g}`, seq, 1_800_000_000_000_000_000+int64(seq)*1_000_000, float64(seq)/4)
	}

	// The agent's session exists once it subscribed; until then the broker
	// keeps nothing for it. A probe reading shows the subscription is there.
	probe := devicePublisher(t, broker.Addr, "probe")
	deadline := time.Now().Add(20 * time.Second)
	for len(storedSeqs(t, a, "probe")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the agent did not store the probe reading within 20 s")
		}
		publish(t, probe, "plant/probe/temp", []byte(`{"seq":0,"t":1,"v":0}`))
		time.Sleep(100 * time.Millisecond) // poll interval
	}

	// Two publishers, five devices each, readings in order per device.
	// The first half goes out while the agent runs; it is killed once
	// about a thousand readings are stored.
	start := time.Now()
	pubs := []paho.Client{devicePublisher(t, broker.Addr, "pub-0"), devicePublisher(t, broker.Addr, "pub-1")}
	send := func(from, to int) {
		var wg sync.WaitGroup
		for p, c := range pubs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := from; seq < to; seq++ {
					for dev := p; dev < devices; dev += len(pubs) {
						topic, payload := reading(dev, seq)
						publish(t, c, topic, payload)
					}
				}
			}()
		}
		wg.Wait()
	}
	send(0, perDevice/2)
	for metricValue(t, a, "synapse_mqtt_southbound_stored_total") < 1000 {
		if time.Since(start) > 120*time.Second { // generous: the suite also runs under qemu
			t.Fatal("fewer than 1000 readings stored after 120 s")
		}
		time.Sleep(pollEvery)
	}
	a.kill()
	// While the agent is away its session at the broker queues the rest.
	send(perDevice/2, perDevice)
	a.start()

	// After the restart: duplicates of readings (a publisher's resend) and
	// bad messages, none of which may store anything or block the rest.
	bad := [][]byte{[]byte("not json"), []byte(`{"seq":1,"t":1}`), []byte(`{"seq":"x","t":1,"v":1}`),
		[]byte(`[1,2,3]`), {0x83, 0xa1}, bytes.Repeat([]byte("x"), 70<<10)}
	for i, p := range bad {
		publish(t, pubs[0], fmt.Sprintf("plant/bad-%d/temp", i), p)
		topic, payload := reading(i, i)
		publish(t, pubs[1], topic, payload)
	}

	for dev := range devices {
		d := fmt.Sprintf("dev-%02d", dev)
		for {
			seqs := storedSeqs(t, a, d)
			if len(seqs) >= perDevice {
				checkOnceInOrder(t, seqs, perDevice)
				break
			}
			if time.Since(start) > 120*time.Second {
				t.Fatalf("%s: %d readings stored after 120 s, want %d", d, len(seqs), perDevice)
			}
			time.Sleep(pollEvery)
		}
	}
	elapsed := time.Since(start)
	for i := range bad {
		if seqs := storedSeqs(t, a, fmt.Sprintf("bad-%d", i)); len(seqs) != 0 {
			t.Errorf("bad message %d stored: %v", i, seqs)
		}
	}
	// The bad messages were published after the restart, between readings
	// that were stored: each was counted once.
	deadline = time.Now().Add(30 * time.Second)
	for metricValue(t, a, "synapse_mqtt_southbound_refused_total") < float64(len(bad)) && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
	if got := metricValue(t, a, "synapse_mqtt_southbound_refused_total"); got != float64(len(bad)) {
		t.Errorf("refused_total %v, want %d", got, len(bad))
	}
	if got := metricValue(t, a, "synapse_mqtt_southbound_duplicates_total"); got < float64(len(bad)) {
		t.Errorf("duplicates_total %v, want at least the %d republished readings", got, len(bad))
	}
	t.Logf("%d readings stored exactly once in %v (agent killed once); duplicates acknowledged after the restart: %v",
		devices*perDevice, elapsed.Round(time.Millisecond), metricValue(t, a, "synapse_mqtt_southbound_duplicates_total"))
}
