package e2e_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
)

// Remote configuration through the broker (issue 32): an operator signs
// config fragments with synapse config sign and publishes them retained
// on a real mosquitto; the real binary applies them and answers on its
// reported topic, signed.

// rcOperator is the operator's side: its keys, the broker, the reports.
type rcOperator struct {
	t     *testing.T
	dir   string
	agent string
	pc    paho.Client

	mu      sync.Mutex
	key     ed25519.PublicKey // the agent's, once known
	raw     [][]byte
	reports []*desired.Report
}

// keygen makes an operator key with the CLI and returns its file and
// public key.
func (o *rcOperator) keygen(name string) (string, string) {
	o.t.Helper()
	path := filepath.Join(o.dir, name+".key")
	code, out, errOut := runCLI(o.t, 10*time.Second, "config", "keygen", "--out", path)
	if code != 0 {
		o.t.Fatalf("config keygen: exit %d: %s", code, errOut)
	}
	return path, strings.TrimSpace(out)
}

// sign makes the desired document of fragment with the CLI.
func (o *rcOperator) sign(keyFile string, version int, fragment string) []byte {
	o.t.Helper()
	frag := filepath.Join(o.dir, "frag-"+strconv.Itoa(version)+".json")
	if err := os.WriteFile(frag, []byte(fragment), 0o600); err != nil {
		o.t.Fatal(err)
	}
	code, out, errOut := runCLI(o.t, 10*time.Second, "config", "sign", "--key", keyFile, "--agent-id", o.agent,
		"--version", strconv.Itoa(version), frag)
	if code != 0 {
		o.t.Fatalf("config sign: exit %d: %s", code, errOut)
	}
	return []byte(strings.TrimSpace(out))
}

// publish puts doc, retained, on the agent's desired topic and returns
// the number of reports seen before it.
func (o *rcOperator) publish(doc []byte) int {
	o.t.Helper()
	o.mu.Lock()
	n := len(o.reports)
	o.mu.Unlock()
	tok := o.pc.Publish("synapse/agents/"+o.agent+"/config/desired", 1, true, doc)
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		o.t.Fatalf("publish the desired document: %v", tok.Error())
	}
	return n
}

// onReport keeps each report on the reported topic, checked with the
// agent's key.
func (o *rcOperator) onReport(_ paho.Client, m paho.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(m.Payload()) == 0 {
		return
	}
	if o.key == nil {
		o.raw = append(o.raw, m.Payload())
		return
	}
	_, r, err := desired.ParseReport(m.Payload(), o.key)
	if err != nil {
		o.t.Errorf("a report that does not verify with the agent's key: %v\n%s", err, m.Payload())
		return
	}
	o.reports = append(o.reports, r)
}

// trust sets the agent's key (from its identity) and checks the reports
// taken before.
func (o *rcOperator) trust(a *agentProc) {
	o.t.Helper()
	r := a.call(http.MethodGet, prefix+"/identity", nil)
	var id struct {
		PublicKey string `json:"public_key"`
	}
	if err := json.Unmarshal(r.body, &id); err != nil {
		o.t.Fatalf("identity: %s", r)
	}
	k, err := base64.StdEncoding.DecodeString(id.PublicKey)
	if err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.key = k
	raw := o.raw
	o.raw = nil
	o.mu.Unlock()
	for _, b := range raw {
		o.onReport(nil, rawMessage(b))
	}
}

// waitReport waits for a report after the first n that answers version
// and returns it.
func (o *rcOperator) waitReport(t *testing.T, a *agentProc, n, version int) *desired.Report {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		o.mu.Lock()
		for _, r := range o.reports[min(n, len(o.reports)):] {
			if r.DesiredVersion == uint64(version) {
				o.mu.Unlock()
				return r
			}
		}
		o.mu.Unlock()
		time.Sleep(pollEvery)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	var got []string
	for _, r := range o.reports {
		got = append(got, strconv.FormatUint(r.DesiredVersion, 10)+":"+r.Result+":"+r.Reason)
	}
	t.Fatalf("no report for version %d after the first %d within 15 s (reports %v)\nagent output:\n%s", version, n, got, a.stderr())
	return nil
}

// rawMessage is a paho message of a payload (for the reports kept before
// the key was known).
type rawMessage []byte

func (rawMessage) Duplicate() bool   { return false }
func (rawMessage) Qos() byte         { return 1 }
func (rawMessage) Retained() bool    { return true }
func (rawMessage) Topic() string     { return "" }
func (rawMessage) MessageID() uint16 { return 0 }
func (m rawMessage) Payload() []byte { return m }
func (rawMessage) Ack()              {}

// TestRemoteConfig: a signed desired document is applied (its live field
// at once, its restart field named) and reported with the hash /health
// shows; a rotated-in second key signs the next; unsigned, forged,
// unknown-key, older, invalid and locked ones are refused with their
// reason and change nothing; a restart applies nothing again and keeps
// the version in force; a document published while the agent was killed
// is applied on its return, and so is one it was killed while taking.
func TestRemoteConfig(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	op := &rcOperator{t: t, dir: t.TempDir(), agent: "gw-rc"}
	key1, pub1 := op.keygen("op1")
	key2, pub2 := op.keygen("op2")
	rogue, _ := op.keygen("rogue")

	cfg := filepath.Join(t.TempDir(), "rc.json")
	writeJSON(t, cfg, map[string]any{"agent_id": op.agent, "system_id": "plant-a", "endpoint": "mqtt:///gw-rc",
		"tier1":         map[string]any{"max_bytes_per_routine": 1000000},
		"mqtt":          map[string]any{"url": broker.URL(), "keepalive_seconds": 2, "max_reconnect_ms": 300},
		"remote_config": map[string]any{"operator_keys": []string{pub1, pub2}}})

	po := paho.NewClientOptions().AddBroker("tcp://" + broker.Addr).SetClientID("operator").
		SetOnConnectHandler(func(c paho.Client) {
			c.Subscribe("synapse/agents/"+op.agent+"/config/reported", 1, op.onReport)
		})
	op.pc = paho.NewClient(po)
	if tok := op.pc.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("operator connect: %v", tok.Error())
	}
	defer op.pc.Disconnect(100)

	a := startAgent(t, agentOpts{args: []string{"--config", cfg, "--grace", "1s"}})
	op.trust(a)
	file0 := a.health().Config.Hash
	unchanged := func(t *testing.T, what string, hash string, maxBytes int64) {
		t.Helper()
		if h := a.health(); h.Config.Hash != hash {
			t.Errorf("%s: health hash %s, want %s (nothing changed)", what, h.Config.Hash, hash)
		}
		if got := a.maxBytes(); got != maxBytes {
			t.Errorf("%s: max_bytes %d, want %d (nothing changed)", what, got, maxBytes)
		}
	}

	var hash2 string
	t.Run("applied", func(t *testing.T) {
		n := op.publish(op.sign(key1, 1, `{"tier1": {"max_bytes_per_routine": 2000000}, "max_file_size": 2097152}`))
		r := op.waitReport(t, a, n, 1)
		if r.Result != "applied" || r.Version != 1 || !slices.Equal(r.Applied, []string{"tier1.max_bytes_per_routine"}) ||
			!slices.Equal(r.RestartRequired, []string{"max_file_size"}) {
			t.Fatalf("report %+v, want applied v1, tier1.max_bytes_per_routine live, max_file_size at restart", r)
		}
		if got := a.maxBytes(); got != 2000000 {
			t.Errorf("max_bytes %d, want 2000000", got)
		}
		h := a.health()
		if h.Config.Hash != r.ConfigHash || h.Config.Hash == file0 || h.Config.LastReload == nil || h.Config.LastReload.Trigger != "remote" {
			t.Errorf("health %+v, want hash %s (not the file's %s) and a remote reload", h.Config, r.ConfigHash, file0)
		}
		// The second pinned key signs the next version (a rotation).
		n = op.publish(op.sign(key2, 2, `{"tier1": {"max_bytes_per_routine": 2500000}}`))
		r = op.waitReport(t, a, n, 2)
		if r.Result != "applied" || r.Version != 2 {
			t.Fatalf("report %+v, want applied v2 signed by the second key", r)
		}
		hash2 = r.ConfigHash
		if got := a.maxBytes(); got != 2500000 {
			t.Errorf("max_bytes %d, want 2500000", got)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("refused", func(t *testing.T) {
		good := op.sign(key1, 3, `{"tier1": {"max_bytes_per_routine": 9000000}}`)
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		edit := func(k string, v any) []byte {
			c := maps(m)
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
			b, _ := json.Marshal(c)
			return b
		}
		var rm map[string]any
		_ = json.Unmarshal(op.sign(rogue, 3, `{"tier1": {"max_bytes_per_routine": 9000000}}`), &rm)
		unsigned := edit("signature", nil)
		var um map[string]any
		_ = json.Unmarshal(unsigned, &um)
		delete(um, "key")
		unsigned, _ = json.Marshal(um)
		cases := []struct {
			name, reason string
			version      int
			doc          []byte
		}{
			{"unsigned", "unsigned", 3, unsigned},
			{"forged", "bad_signature", 3, edit("signature", rm["signature"])},
			{"tampered", "bad_signature", 3, []byte(strings.Replace(string(good), "9000000", "9000001", 1))},
			{"unknown key", "unknown_key", 3, op.sign(rogue, 3, `{"tier1": {"max_bytes_per_routine": 9000000}}`)},
			{"older", "stale_version", 1, op.sign(key1, 1, `{"tier1": {"max_bytes_per_routine": 9000000}}`)},
			{"same version", "stale_version", 2, op.sign(key1, 2, `{"tier1": {"max_bytes_per_routine": 9000000}}`)},
			{"invalid config", "invalid_config", 3, op.sign(key1, 3, `{"max_concurrent_tasks": -5, "tier1": {"max_bytes_per_routine": 9000000}}`)},
			{"unknown key in the fragment", "invalid_config", 3, op.sign(key1, 3, `{"max_concurent_tasks": 5}`)},
			{"locked field", "locked_field", 3, op.sign(key1, 3, `{"mqtt": {"url": "mqtt://127.0.0.1:1"}}`)},
			{"another agent", "wrong_agent", 3, op.signFor(key1, "gw-other", 3)},
			{"not a document", "malformed", 0, []byte(`{"max_bytes_per_routine": 9000000}`)},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				n := op.publish(c.doc)
				r := op.waitReport(t, a, n, c.version)
				if r.Result != "refused" || r.Reason != c.reason || r.Version != 2 || r.ConfigHash != hash2 || len(r.Problems) == 0 {
					t.Errorf("report %+v, want refused for %s, version 2 and hash %s in force", r, c.reason, hash2)
				}
				unchanged(t, c.name, hash2, 2500000)
			})
		}
		if got := metricValue(t, a, `synapse_remote_config_documents_total{result="refused"}`); got != float64(len(cases)) {
			t.Errorf("refused documents counted %v, want %d", got, len(cases))
		}
	})

	t.Run("restart", func(t *testing.T) {
		// The retained document is the last refused one; v2 again (the
		// one in force) is what a broker holds after a good publish.
		n := op.publish(op.sign(key2, 2, `{"tier1": {"max_bytes_per_routine": 2500000}}`))
		if r := op.waitReport(t, a, n, 2); r.Result != "applied" || r.Version != 2 || len(r.Applied) != 0 {
			t.Fatalf("the document in force sent again: %+v, want applied, nothing changed", r)
		}
		a.stop()
		op.mu.Lock()
		n = len(op.reports)
		op.mu.Unlock()
		a.start()
		// At its return the broker sends the retained v2 again: answered,
		// not applied again (no reload since the start).
		if r := op.waitReport(t, a, n, 2); r.Result != "applied" || r.Version != 2 || r.ConfigHash != hash2 || len(r.Applied) != 0 {
			t.Fatalf("after the restart: %+v, want v2 in force, nothing applied", r)
		}
		h := rcHealth(a)
		if h.Config.Hash != hash2 || h.Config.RemoteVersion != 2 || h.Config.LastReload != nil {
			t.Errorf("health after the restart %+v, want hash %s, remote_version 2, no reload", h.Config, hash2)
		}
		if got := a.maxBytes(); got != 2500000 {
			t.Errorf("max_bytes after the restart %d, want 2500000 (v2 in force from the start)", got)
		}
		n = op.publish(op.sign(key1, 1, `{"tier1": {"max_bytes_per_routine": 1500000}}`))
		if r := op.waitReport(t, a, n, 1); r.Result != "refused" || r.Reason != "stale_version" {
			t.Errorf("v1 after the restart: %+v, want refused stale_version", r)
		}
	})

	t.Run("offline", func(t *testing.T) {
		a.kill()
		op.mu.Lock()
		n := len(op.reports)
		op.mu.Unlock()
		op.publish(op.sign(key1, 4, `{"tier1": {"max_bytes_per_routine": 4000000}}`))
		a.start()
		if r := op.waitReport(t, a, n, 4); r.Result != "applied" || r.Version != 4 {
			t.Fatalf("the document published while the agent was down: %+v, want applied v4", r)
		}
		if got := a.maxBytes(); got != 4000000 {
			t.Errorf("max_bytes %d, want 4000000", got)
		}
	})

	t.Run("kill -9 while taking", func(t *testing.T) {
		// Killed at a random moment after the publish: after its restart
		// the agent has the version in force, once.
		for v := 5; v <= 7; v++ {
			want := int64(v) * 1000000
			op.publish(op.sign(key1, v, `{"tier1": {"max_bytes_per_routine": `+strconv.FormatInt(want, 10)+`}}`))
			time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond) // a random kill point, not a wait for a state
			a.kill()
			op.mu.Lock()
			n := len(op.reports)
			op.mu.Unlock()
			a.start()
			r := op.waitReport(t, a, n, v)
			if r.Result != "applied" || r.Version != uint64(v) {
				t.Fatalf("v%d after kill -9: %+v, want applied", v, r)
			}
			if got := a.maxBytes(); got != want {
				t.Errorf("v%d: max_bytes %d, want %d", v, got, want)
			}
		}
	})
	a.stop()
}

// signFor is sign for another agent_id.
func (o *rcOperator) signFor(keyFile, agentID string, version int) []byte {
	o.t.Helper()
	saved := o.agent
	o.agent = agentID
	defer func() { o.agent = saved }()
	return o.sign(keyFile, version, `{"tier1": {"max_bytes_per_routine": 9000000}}`)
}

func maps(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// rcHealth is /health's config with the remote version.
func rcHealth(a *agentProc) (h struct {
	Config struct {
		Hash          string          `json:"hash"`
		RemoteVersion uint64          `json:"remote_version"`
		LastReload    json.RawMessage `json:"last_reload"`
	} `json:"config"`
}) {
	a.t.Helper()
	r := a.call(http.MethodGet, prefix+"/health", nil)
	if err := json.Unmarshal(r.body, &h); err != nil {
		a.t.Fatalf("GET /health: %s", r)
	}
	return h
}
