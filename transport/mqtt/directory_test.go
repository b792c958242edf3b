package mqtt_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
	"github.com/synapse-edge/synapse/wire"
)

// cardOf is a card of agent id signed with the key of seed.
func cardOf(t testing.TB, seed byte, id, status string) []byte {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	c := mqtt.Card{Status: status, PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)),
		Endpoint: "mqtt:///" + id, TaskTypes: []string{"echo"}}
	p, err := wire.NewJSONPayload(c)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(mqtt.MsgAgentCard, wire.AgentRef{AgentID: id, SystemID: "plant-a"}, wire.AgentRef{AgentID: "*"}, p, time.Now())
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A directory keeps what verifies and drops, counting, everything else.
func TestDirectoryHostile(t *testing.T) {
	d := mqtt.NewDirectory()
	topic := func(id string) string { return "synapse/agents/" + id + "/card" }
	if !d.Take(topic("gw-1"), cardOf(t, 1, "gw-1", mqtt.CardOnline)) {
		t.Fatal("a good card was dropped")
	}
	good := cardOf(t, 2, "gw-2", mqtt.CardOnline)
	for name, x := range map[string]struct {
		topic   string
		payload []byte
	}{
		"unsigned":              {topic("gw-2"), bytes.Replace(good, []byte(`"signature":"`), []byte(`"signature":"AAAA`), 1)},
		"forged status":         {topic("gw-2"), bytes.Replace(good, []byte(`online`), []byte(`offline`), 1)},
		"oversized":             {topic("gw-2"), append(bytes.Clone(good), bytes.Repeat([]byte(" "), 64<<10)...)},
		"garbage":               {topic("gw-2"), []byte("\x00\xff{")},
		"under another id":      {topic("gw-9"), good},
		"gw-1 with another key": {topic("gw-1"), cardOf(t, 3, "gw-1", mqtt.CardOffline)},
		"not a card topic":      {"synapse/agents/gw-2/inbox", good},
		"wildcard level":        {"synapse/agents/+/card", good},
	} {
		before := d.Dropped.Load()
		if d.Take(x.topic, x.payload) {
			t.Errorf("%s: kept", name)
		}
		if d.Dropped.Load() != before+1 {
			t.Errorf("%s: not counted", name)
		}
	}
	l := d.List()
	if len(l) != 1 || l[0].AgentID != "gw-1" || l[0].Card.Status != mqtt.CardOnline || l[0].SystemID != "plant-a" {
		t.Fatalf("directory after hostile cards: %+v", l)
	}
	if n, on := d.Counts(); n != 1 || on != 1 {
		t.Fatalf("Counts = %d agents, %d online; want 1, 1", n, on)
	}
	// The same key may change the status; an empty retained message
	// removes the agent.
	if !d.Take(topic("gw-1"), cardOf(t, 1, "gw-1", mqtt.CardOffline)) || d.List()[0].Card.Status != mqtt.CardOffline {
		t.Fatalf("offline card of the same key: %+v", d.List())
	}
	if n, on := d.Counts(); n != 1 || on != 0 {
		t.Fatalf("Counts after the offline card = %d agents, %d online; want 1, 0", n, on)
	}
	if !d.Take(topic("gw-1"), nil) || len(d.List()) != 0 {
		t.Fatalf("after an empty retained card: %+v", d.List())
	}
}

// Through a real broker: the directory sees another transport's card
// online, offline after a clean stop, and drops a forged card published
// there.
func TestDirectoryFromBroker(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	opts := mqtt.Options{URL: b.URL(), MaxReconnectInterval: 200 * time.Millisecond}
	d := mqtt.NewDirectory()
	obs, err := mqtt.NewTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	obs.SetDirectory(d)
	if err := obs.Start(context.Background(), "plant-a", "observer"); err != nil {
		t.Fatal(err)
	}
	defer obs.Close(context.Background())

	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, ed25519.SeedSize))
	gw, err := mqtt.NewTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	gw.SetPresence(mqtt.Card{PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)),
		Endpoint: "mqtt:///gw-5", TaskTypes: []string{"echo", "scan"}, Capabilities: map[string][]string{"scan": {"imaging"}}},
		func(m *wire.UnifiedSynapseMessage) error { return wire.Sign(m, priv) })
	if err := gw.Start(context.Background(), "plant-a", "gw-5"); err != nil {
		t.Fatal(err)
	}
	status := func() string {
		for _, l := range d.List() {
			if l.AgentID == "gw-5" {
				return l.Card.Status
			}
		}
		return ""
	}
	testutil.Eventually(t, 10*time.Second, "gw-5 online in the directory", func() bool { return status() == mqtt.CardOnline })
	if l := d.List(); len(l) != 1 || l[0].Card.Capabilities["scan"][0] != "imaging" {
		t.Fatalf("directory: %+v", l)
	}

	// A forged card on the broker (another key for gw-5) is dropped.
	waitUp(t, obs.Client())
	before := d.Dropped.Load()
	if err := obs.Client().Publish(context.Background(), "synapse/agents/gw-5/card", cardOf(t, 6, "gw-5", mqtt.CardOffline), false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the forged card counted", func() bool { return d.Dropped.Load() > before })
	if s := status(); s != mqtt.CardOnline {
		t.Fatalf("after a forged offline card gw-5 is %q", s)
	}

	_ = gw.Close(context.Background())
	testutil.Eventually(t, 10*time.Second, "gw-5 offline after a clean stop", func() bool { return status() == mqtt.CardOffline })
}
