package e2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/cli/remoteupdate"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// TestUpdateThroughBroker: update commands on a real mosquitto. A forged
// one (another operator key) and one whose release is signed by another
// release key are refused and reported, the binary unchanged; a good one
// is installed, the agent restarts into v2 and reports it committed; an
// older one then is refused as stale. Every report is signed by the
// agent's key.
func TestUpdateThroughBroker(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	key, otherRelease := newReleaseKey(t), newReleaseKey(t)
	site := newUpdateSite(t, key, "exec", 20)
	opPub, opPriv, _ := ed25519.GenerateKey(rand.Reader)
	_, forger, _ := ed25519.GenerateKey(rand.Reader)
	const agentID = "gw-upd"
	writeJSON(t, site.config, map[string]any{"agent_id": agentID, "system_id": "plant-a", "endpoint": "mqtt:///" + agentID,
		"mqtt": map[string]any{"url": broker.URL(), "keepalive_seconds": 5, "max_reconnect_ms": 300},
		"update": map[string]any{"release_keys_file": "release.pub", "operator_keys": []string{base64.StdEncoding.EncodeToString(opPub)},
			"health_timeout_seconds": 20}})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.FileServer(http.Dir(filepath.Dir(site.release[updV2])))}
	go hs.Serve(ln)
	defer hs.Close()
	releaseURL := func(v string) string { return "http://" + ln.Addr().String() + "/" + filepath.Base(site.release[v]) }
	sha := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	minisig := func(path string) string {
		b, err := os.ReadFile(path + ".minisig")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	var mu sync.Mutex
	var reports []*remoteupdate.Report
	var agentKey ed25519.PublicKey
	var bad []string
	o := paho.NewClientOptions().AddBroker("tcp://" + broker.Addr).SetClientID("operator").
		SetOnConnectHandler(func(c paho.Client) {
			c.Subscribe("synapse/agents/"+agentID+"/card", 1, func(_ paho.Client, m paho.Message) {
				if _, card, err := mqtt.ParseCard(m.Payload()); err == nil {
					if k, err := base64.StdEncoding.DecodeString(card.PublicKey); err == nil {
						mu.Lock()
						agentKey = k
						mu.Unlock()
					}
				}
			})
			c.Subscribe("synapse/agents/"+agentID+"/update/reported", 1, func(_ paho.Client, m paho.Message) {
				mu.Lock()
				defer mu.Unlock()
				r, err := remoteupdate.ParseReport(m.Payload(), agentKey)
				if err != nil {
					bad = append(bad, err.Error())
					return
				}
				reports = append(reports, r)
			})
		})
	op := paho.NewClient(o)
	if tok := op.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("operator connect: %v", tok.Error())
	}
	defer op.Disconnect(100)
	publish := func(doc []byte) {
		t.Helper()
		if tok := op.Publish("synapse/agents/"+agentID+"/update/desired", 1, true, doc); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	waitReport := func(what string, ok func(*remoteupdate.Report) bool) *remoteupdate.Report {
		t.Helper()
		deadline := time.Now().Add(healthTimeout)
		for time.Now().Before(deadline) {
			mu.Lock()
			if len(bad) > 0 {
				mu.Unlock()
				t.Fatalf("reports that do not verify: %v", bad)
			}
			for _, r := range reports {
				if ok(r) {
					mu.Unlock()
					return r
				}
			}
			mu.Unlock()
			time.Sleep(pollEvery)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no report %s; reports %+v", what, reports)
		return nil
	}

	agent := site.serve(t, false)
	agent.waitVersion(updV1, healthTimeout)
	for deadline := time.Now().Add(healthTimeout); ; {
		mu.Lock()
		k := agentKey
		mu.Unlock()
		if k != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no card from the agent")
		}
		time.Sleep(pollEvery)
	}
	before, _ := os.ReadFile(site.bin)

	forged, err := remoteupdate.Sign(forger, agentID, 1, releaseURL(updV2), sha(site.release[updV2]), minisig(site.release[updV2]))
	if err != nil {
		t.Fatal(err)
	}
	publish(forged)
	r := waitReport("refusing the forged command", func(r *remoteupdate.Report) bool { return r.DesiredVersion == 1 && r.Result == "refused" })
	if !strings.Contains(r.Reason, "not one of update.operator_keys") {
		t.Fatalf("forged: %+v", r)
	}
	// Signed by the operator, but the release by another release key.
	other := filepath.Join(filepath.Dir(site.release[updV2]), "synapse-other")
	copyExec(t, site.release[updV2], other)
	otherRelease.sign(t, other)
	wrong, err := remoteupdate.Sign(opPriv, agentID, 2, releaseURL(updV2), sha(other), minisig(other))
	if err != nil {
		t.Fatal(err)
	}
	publish(wrong)
	r = waitReport("failing the release of another key", func(r *remoteupdate.Report) bool { return r.DesiredVersion == 2 && r.Result == "failed" })
	if !strings.Contains(r.Reason, "release key") {
		t.Fatalf("other release key: %+v", r)
	}
	if after, _ := os.ReadFile(site.bin); string(after) != string(before) {
		t.Fatal("a refused command changed the binary")
	}
	if st, v, _ := agent.health(); st != "SERVING" || v != updV1 {
		t.Fatalf("after the refusals: %s %s", st, v)
	}

	good, err := remoteupdate.Sign(opPriv, agentID, 3, releaseURL(updV2), sha(site.release[updV2]), minisig(site.release[updV2]))
	if err != nil {
		t.Fatal(err)
	}
	publish(good)
	agent.waitVersion(updV2, healthTimeout)
	waitReport("v2 committed", func(r *remoteupdate.Report) bool {
		return r.DesiredVersion == 3 && r.Result == "ok" && r.Running == updV2 && r.FromVersion == updV1
	})
	waitReport("installed", func(r *remoteupdate.Report) bool { return r.DesiredVersion == 3 && r.Result == "installed" })

	stale, err := remoteupdate.Sign(opPriv, agentID, 2, releaseURL(updV1), sha(site.release[updV1]), minisig(site.release[updV1]))
	if err != nil {
		t.Fatal(err)
	}
	publish(stale)
	r = waitReport("refusing the stale command", func(r *remoteupdate.Report) bool {
		return r.DesiredVersion == 2 && r.Result == "refused" && r.Running == updV2
	})
	if !strings.Contains(r.Reason, "not newer than version 3") {
		t.Fatalf("stale: %+v", r)
	}
	if st, v, _ := agent.health(); st != "SERVING" || v != updV2 {
		t.Fatalf("after the stale command: %s %s", st, v)
	}
}
