package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// cloudConsumer is what a cloud backend would write from the README: a
// plain MQTT subscriber on {prefix}/+/+/tier1/# that decodes each batch
// with a generic msgpack library, deduplicates on batch_id and orders by
// its number.
type cloudConsumer struct {
	t  *testing.T
	mu sync.Mutex
	// seen maps batch_id to the decoded batch; first lists batch numbers
	// in the order they first arrived; copies counts every arrival.
	seen   map[string][]any
	first  []int
	copies int
	topics map[string]bool
	bad    []string
	// subscribed counts the subscriptions the broker granted.
	subscribed int
}

func startCloudConsumer(t *testing.T, url string) *cloudConsumer {
	t.Helper()
	cc := &cloudConsumer{t: t, seen: map[string][]any{}, topics: map[string]bool{}}
	handle := func(_ paho.Client, m paho.Message) {
		var batch []any // [capability_id, version, [frame, ...], batch_id]
		err := msgpack.Unmarshal(m.Payload(), &batch)
		cc.mu.Lock()
		defer cc.mu.Unlock()
		cc.copies++
		cc.topics[m.Topic()] = true
		if err != nil || len(batch) != 4 {
			cc.bad = append(cc.bad, fmt.Sprintf("%s: %v (%d elements)", m.Topic(), err, len(batch)))
			return
		}
		id, _ := batch[3].(string)
		if _, dup := cc.seen[id]; dup {
			return
		}
		n, err := strconv.Atoi(id[1:]) // "u<seq>"
		if err != nil {
			cc.bad = append(cc.bad, "batch_id "+id)
			return
		}
		cc.seen[id] = batch
		cc.first = append(cc.first, n)
	}
	o := paho.NewClientOptions().AddBroker("tcp://" + url).SetClientID("cloud-consumer").
		SetCleanSession(false).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(100 * time.Millisecond).SetMaxReconnectInterval(200 * time.Millisecond).
		// What the broker kept for this session is sent at once on a
		// reconnection, maybe before the subscription below is made.
		SetDefaultPublishHandler(handle).
		SetOnConnectHandler(func(c paho.Client) {
			// A broker restarted without persistence forgot the session.
			tok := c.Subscribe("synapse/+/+/tier1/#", 1, handle)
			go func() {
				if tok.Wait() && tok.Error() == nil {
					cc.mu.Lock()
					cc.subscribed++
					cc.mu.Unlock()
				}
			}()
		})
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("consumer connect: %v", tok.Error())
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return cc
}

// waitSubscribed waits until the broker granted n subscriptions in all.
func (cc *cloudConsumer) waitSubscribed(n int) {
	cc.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		cc.mu.Lock()
		got := cc.subscribed
		cc.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(pollEvery)
	}
	cc.t.Fatalf("the consumer did not subscribe again within 20 s")
}

// waitBatches waits until n distinct batches arrived.
func (cc *cloudConsumer) waitBatches(n int) {
	cc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		cc.mu.Lock()
		got := len(cc.seen)
		cc.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(pollEvery)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.t.Fatalf("the consumer has %d distinct batches after 60 s, want %d; first arrivals %v", len(cc.seen), n, cc.first)
}

// TestMQTTNorthbound: an agent whose uplink is the broker publishes every
// stored batch, as its exact bytes, through the broker being away at the
// start, the agent killed with -9 while batches wait, and the broker
// restarted mid-stream. The consumer sees every batch at least once, each
// with its frames, first arrivals in order.
//
// The broker is one deployed for durable delivery (persistence on,
// stopped gracefully): it keeps the consumer's session and every message
// it acknowledged across its restarts. The agent's part is to publish
// again whatever the broker had not acknowledged. (A broker without
// persistence loses, in a restart, the messages it acknowledged and had
// not yet passed on: no publisher can bring those back.)
func TestMQTTNorthbound(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{Persistent: true})
	consumer := startCloudConsumer(t, broker.Addr)
	cfg := filepath.Join(t.TempDir(), "mqtt.json")
	conf := fmt.Sprintf(`{"system_id":"plant-a","agent_id":"gw-7",
		"mqtt":{"url":%q,"max_reconnect_ms":300,"keepalive_seconds":5},
		"uplink":{"endpoint":"mqtt://"}}`, broker.URL())
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ingest := func(a *agentProc, from, batches int) { t.Helper(); ingestT1(t, a, "n", from, batches, 10) }

	consumer.waitSubscribed(1)
	broker.Stop() // away at the start
	a := startAgent(t, agentOpts{args: []string{"--config", cfg}})
	ingest(a, 0, 20)
	a.kill() // with 20 batches waiting
	a.start()
	broker.Restart()
	consumer.waitBatches(20)

	// Mid-stream: the broker restarts while batches go out, then the
	// agent is killed and restarted.
	ingest(a, 20, 15)
	broker.Restart()
	ingest(a, 35, 15)
	a.kill()
	a.start()
	ingest(a, 50, 10)
	defer func() {
		if t.Failed() {
			r := a.call("GET", "/metrics", nil)
			t.Logf("metrics: %s", r.body)
			t.Logf("broker: %s", broker.Log())
		}
	}()
	consumer.waitBatches(60)

	consumer.mu.Lock()
	defer consumer.mu.Unlock()
	if len(consumer.bad) > 0 {
		t.Fatalf("undecodable messages: %v", consumer.bad)
	}
	if !sort.IntsAreSorted(consumer.first) {
		t.Errorf("first arrivals out of order: %v", consumer.first)
	}
	want := "synapse/plant-a/gw-7/tier1/synapse.telemetry"
	if len(consumer.topics) != 1 || !consumer.topics[want] {
		t.Errorf("topics %v, want only %s", consumer.topics, want)
	}
	// Each batch has its frames: batch k (1-based queue number) holds
	// seqs (k-1)*10 .. (k-1)*10+9 of device "n".
	for k := 1; k <= 60; k++ {
		b, ok := consumer.seen[fmt.Sprintf("u%d", k)]
		if !ok {
			t.Fatalf("batch u%d never arrived", k)
		}
		if b[0] != "synapse.telemetry" || b[1] != "1.0.0" {
			t.Fatalf("batch u%d: routine %v %v", k, b[0], b[1])
		}
		frames, _ := b[2].([]any)
		if len(frames) != 10 {
			t.Fatalf("batch u%d: %d frames, want 10", k, len(frames))
		}
		for i, f := range frames {
			fr, _ := f.([]any)
			if len(fr) < 5 || fr[0] != "n" || toInt(fr[1]) != (k-1)*10+i {
				t.Fatalf("batch u%d frame %d: %v", k, i, f)
			}
		}
	}
	t.Logf("%d batches arrived %d times in all", len(consumer.seen), consumer.copies)
}

func toInt(v any) int {
	switch x := v.(type) {
	case int8:
		return int(x)
	case int16:
		return int(x)
	case int32:
		return int(x)
	case int64:
		return int(x)
	case uint8:
		return int(x)
	case uint16:
		return int(x)
	case uint32:
		return int(x)
	case uint64:
		return int(x)
	}
	return -1
}
