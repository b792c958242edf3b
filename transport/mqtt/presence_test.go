package mqtt_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/wire"
)

// signedCard is a card signed with a fixed key (seeded: the corpus in
// testdata/cards was written by it).
func signedCard(t testing.TB, status string) []byte {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	c := mqtt.Card{Status: status, PublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)),
		Endpoint: "mqtt:///gw-7", TaskTypes: []string{"echo"}}
	p, err := wire.NewJSONPayload(c)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(mqtt.MsgAgentCard, wire.AgentRef{AgentID: "gw-7", SystemID: "plant-a"}, wire.AgentRef{AgentID: "*"}, p,
		time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC))
	if err := wire.Sign(m, priv); err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseCardHostile(t *testing.T) {
	good := signedCard(t, mqtt.CardOnline)
	if _, c, err := mqtt.ParseCard(good); err != nil || c.Status != mqtt.CardOnline || c.TaskTypes[0] != "echo" {
		t.Fatalf("a good card: %+v %v", c, err)
	}
	for name, b := range map[string][]byte{
		"empty":              nil,
		"not JSON":           []byte("SYNQ"),
		"status changed":     bytes.Replace(good, []byte(`online`), []byte(`offline`), 1),
		"another key":        bytes.Replace(good, []byte(`"public_key":"`), []byte(`"public_key":"AAAA`), 1),
		"truncated":          good[:len(good)/2],
		"over 64 KiB":        append(bytes.Clone(good), bytes.Repeat([]byte(" "), 64<<10)...),
		"another type":       bytes.Replace(good, []byte(`"agent_card"`), []byte(`"p2p:heartbeat"`), 1),
		"unknown status":     signedCard(t, "busy"),
		"payload not object": bytes.Replace(good, []byte(`"payload":{`), []byte(`"payload":[{`), 1),
	} {
		t.Run(name, func(t *testing.T) {
			if _, c, err := mqtt.ParseCard(b); err == nil {
				t.Fatalf("accepted: %+v", c)
			}
		})
	}
}

// FuzzParseCard: a card from the broker is refused or verifies; seeded
// from testdata/cards.
func FuzzParseCard(f *testing.F) {
	paths, _ := filepath.Glob("testdata/cards/*.json")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(signedCard(f, mqtt.CardOffline))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, c, err := mqtt.ParseCard(b)
		if err != nil {
			return
		}
		key, _ := base64.StdEncoding.DecodeString(c.PublicKey)
		if m.MessageType != mqtt.MsgAgentCard || wire.Verify(m, ed25519.PublicKey(key)) != nil {
			t.Fatalf("accepted a card that does not verify: %s", b)
		}
	})
}
