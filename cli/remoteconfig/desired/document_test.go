package desired_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// seedKey is a fixed operator key: Ed25519 signatures are deterministic,
// so the vectors are known answers.
func seedKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

type vector struct {
	Name           string `json:"name"`
	Seed           string `json:"seed_hex"`
	AgentID        string `json:"agent_id"`
	Version        uint64 `json:"version"`
	Config         string `json:"config_text"`
	SignatureInput string `json:"signature_input"`
	Document       string `json:"document"`
}

// TestVectors: the signature input and the signed document of known
// keys and fragments, byte for byte (testdata/vectors.json; -update
// rewrites it), and each document verifies.
func TestVectors(t *testing.T) {
	cases := []struct {
		name    string
		seed    byte
		agent   string
		version uint64
		config  string
	}{
		{"live fields", 1, "gw-7", 1, `{"max_concurrent_tasks":3,"log_level":"debug"}`},
		{"nested section and unicode", 2, "plant_a_gw_1a2b3c", 42, `{"tier1":{"retention_hours":12},"approvals":[{"task_type":"valve","reason":"ouvrir une vanne: une personne"}]}`},
		{"largest version", 3, "gw-7", desired.MaxVersion, `{}`},
	}
	path := filepath.Join("testdata", "vectors.json")
	var want []vector
	if !*update {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if len(want) != len(cases) {
			t.Fatalf("%d vectors in %s, want %d", len(want), path, len(cases))
		}
	}
	var got []vector
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			priv := seedKey(c.seed)
			doc, err := desired.Sign(priv, c.agent, c.version, []byte(c.config))
			if err != nil {
				t.Fatal(err)
			}
			v := vector{Name: c.name, Seed: hex.EncodeToString(priv.Seed()), AgentID: c.agent, Version: c.version, Config: c.config,
				SignatureInput: string(desired.SignatureInput(c.agent, c.version, []byte(c.config))), Document: string(doc)}
			got = append(got, v)
			if !*update {
				w := want[i]
				if v.SignatureInput != w.SignatureInput {
					t.Errorf("signature input\n got %q\nwant %q", v.SignatureInput, w.SignatureInput)
				}
				if v.Document != w.Document {
					t.Errorf("document\n got %s\nwant %s", v.Document, w.Document)
				}
			}
			d, err := desired.Decode(doc)
			if err != nil {
				t.Fatalf("decode the signed document: %v", err)
			}
			if string(d.Config) != c.config || d.Version != c.version || d.AgentID != c.agent {
				t.Errorf("decoded %+v", d)
			}
			if err := d.Verify(c.agent, []ed25519.PublicKey{seedKey(9).Public().(ed25519.PublicKey), priv.Public().(ed25519.PublicKey)}); err != nil {
				t.Errorf("verify: %v", err)
			}
		})
	}
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSignatureOverExactBytes: the signature is over the config member's
// bytes as they are: a document written by hand, with spaces and its
// members in another order, verifies when signed over those bytes, and
// the same fragment re-encoded does not match its signature.
func TestSignatureOverExactBytes(t *testing.T) {
	priv := seedKey(1)
	pub := priv.Public().(ed25519.PublicKey)
	cfg := `{ "max_concurrent_tasks" : 3 }`
	sig := ed25519.Sign(priv, desired.SignatureInput("gw-7", 5, []byte(cfg)))
	doc := `{"config": ` + cfg + `,
	  "signature": "` + base64.StdEncoding.EncodeToString(sig) + `", "version": 5,
	  "key": "` + base64.StdEncoding.EncodeToString(pub) + `", "agent_id": "gw-7"}`
	d, err := desired.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.Config); got != cfg {
		t.Fatalf("config kept as %q, want the exact bytes %q", got, cfg)
	}
	if err := d.Verify("gw-7", []ed25519.PublicKey{pub}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	d.Config = json.RawMessage(`{"max_concurrent_tasks":3}`)
	if err := d.Verify("gw-7", []ed25519.PublicKey{pub}); reason(err) != desired.ReasonBadSignature {
		t.Errorf("re-encoded config: %v, want bad_signature", err)
	}
}

func reason(err error) string {
	var r *desired.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ""
}

// TestRefusals: hostile and wrong documents, each refused with its reason.
func TestRefusals(t *testing.T) {
	priv, other := seedKey(1), seedKey(2)
	pub := priv.Public().(ed25519.PublicKey)
	good, err := desired.Sign(priv, "gw-7", 3, []byte(`{"max_concurrent_tasks":3}`))
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := desired.Sign(other, "gw-7", 3, []byte(`{"max_concurrent_tasks":3}`))
	var fm map[string]any
	_ = json.Unmarshal(forged, &fm)
	var gm map[string]any
	_ = json.Unmarshal(good, &gm)
	with := func(m map[string]any, k string, v any) []byte {
		c := map[string]any{}
		for kk, vv := range m {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		return b
	}
	// A forged signature under the pinned key.
	forgedSig := with(gm, "signature", fm["signature"])
	// A changed fragment under the first signature.
	tampered := bytes.Replace(good, []byte(`"max_concurrent_tasks":3`), []byte(`"max_concurrent_tasks":9`), 1)
	cases := []struct {
		name, reason string
		raw          []byte
	}{
		{"empty object", desired.ReasonMalformed, []byte(`{}`)},
		{"not JSON", desired.ReasonMalformed, []byte(`max_concurrent_tasks=3`)},
		{"array", desired.ReasonMalformed, []byte(`[1,2]`)},
		{"truncated", desired.ReasonMalformed, good[:len(good)-2]},
		{"two values", desired.ReasonMalformed, append(append([]byte{}, good...), good...)},
		{"unknown member", desired.ReasonMalformed, with(gm, "extra", 1)},
		{"member twice", desired.ReasonMalformed, bytes.Replace(good, []byte(`{"agent_id":"gw-7",`), []byte(`{"agent_id":"gw-7","agent_id":"gw-8",`), 1)},
		{"version zero", desired.ReasonMalformed, with(gm, "version", 0)},
		{"version negative", desired.ReasonMalformed, with(gm, "version", -1)},
		{"version fraction", desired.ReasonMalformed, with(gm, "version", 1.5)},
		{"version string", desired.ReasonMalformed, with(gm, "version", "3")},
		{"version over 2^53", desired.ReasonMalformed, with(gm, "version", uint64(1)<<53)},
		{"config array", desired.ReasonMalformed, with(gm, "config", []int{1})},
		{"config null", desired.ReasonMalformed, bytes.Replace(with(gm, "config", "x"), []byte(`"config":"x"`), []byte(`"config":null`), 1)},
		{"config missing", desired.ReasonMalformed, with(gm, "config", nil)},
		{"agent_id wildcard", desired.ReasonMalformed, with(gm, "agent_id", "gw/+")},
		{"agent_id newline", desired.ReasonMalformed, with(gm, "agent_id", "gw-7\n3")},
		{"too large", desired.ReasonMalformed, with(gm, "config", map[string]string{"log_level": strings.Repeat("x", desired.MaxDocument)})},
		{"deep nesting", desired.ReasonMalformed, []byte(strings.Repeat("[", 20000) + strings.Repeat("]", 20000))},
		{"unsigned", desired.ReasonUnsigned, with(jsonMap(with(gm, "signature", nil)), "key", nil)},
		{"no signature", desired.ReasonUnsigned, with(gm, "signature", nil)},
		{"empty signature", desired.ReasonUnsigned, with(gm, "signature", "")},
		{"unknown key", desired.ReasonUnknownKey, forged},
		{"key not base64", desired.ReasonUnknownKey, with(gm, "key", "!!")},
		{"forged signature", desired.ReasonBadSignature, forgedSig},
		{"tampered fragment", desired.ReasonBadSignature, tampered},
		{"signature not base64", desired.ReasonBadSignature, with(gm, "signature", "%%%")},
		{"short signature", desired.ReasonBadSignature, with(gm, "signature", base64.StdEncoding.EncodeToString([]byte("short")))},
		{"another agent", desired.ReasonWrongAgent, mustSign(t, priv, "gw-8", 3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := desired.Decode(c.raw)
			if err == nil {
				err = d.Verify("gw-7", []ed25519.PublicKey{pub})
			}
			if got := reason(err); got != c.reason {
				t.Errorf("got %v (reason %q), want reason %q", err, got, c.reason)
			}
		})
	}
}

func jsonMap(b []byte) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func mustSign(t *testing.T, priv ed25519.PrivateKey, agent string, v uint64) []byte {
	t.Helper()
	b, err := desired.Sign(priv, agent, v, []byte(`{"max_concurrent_tasks":3}`))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSignRefuses: sign takes a JSON object and a version in range.
func TestSignRefuses(t *testing.T) {
	priv := seedKey(1)
	for _, c := range []struct {
		name, cfg string
		v         uint64
	}{{"array", `[1]`, 1}, {"not JSON", `{`, 1}, {"version 0", `{}`, 0}, {"version too big", `{}`, desired.MaxVersion + 1}} {
		if _, err := desired.Sign(priv, "gw-7", c.v, []byte(c.cfg)); err == nil {
			t.Errorf("%s: signed", c.name)
		}
	}
}

// TestKeys: keygen writes a 0600 key that sign reads, refuses to
// overwrite it, and prints the public key of that key.
func TestKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "op.key")
	pub, err := desired.GenerateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", fi, err)
	}
	priv, err := desired.ReadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)); got != pub {
		t.Errorf("printed public key %s, the file's is %s", pub, got)
	}
	if _, err := desired.GenerateKey(path); err == nil {
		t.Error("keygen overwrote an existing key")
	}
	if err := os.WriteFile(path+".bad", []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := desired.ReadKey(path + ".bad"); err == nil {
		t.Error("read a key from a file that is not PEM")
	}
}

// BenchmarkDecodeVerify: one desired document of about 1 KiB decoded and
// verified (what the agent does per document).
func BenchmarkDecodeVerify(b *testing.B) {
	priv := seedKey(1)
	pub := priv.Public().(ed25519.PublicKey)
	doc, err := desired.Sign(priv, "gw-7", 3, []byte(`{"approvals":[{"task_type":"valve","reason":"`+strings.Repeat("x", 900)+`"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := desired.Decode(doc)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Verify("gw-7", []ed25519.PublicKey{pub}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestREADMEReasons: the README's table of refusal reasons names exactly
// Reasons, in order.
func TestREADMEReasons(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(raw), "### Remote configuration\n")
	if !ok {
		t.Fatal("README.md has no Remote configuration section")
	}
	sec, _, _ = strings.Cut(sec, "\n### ")
	_, table, ok := strings.Cut(sec, "| reason | the document |\n|---|---|\n")
	if !ok {
		t.Fatal("the Remote configuration section has no table of reasons")
	}
	var got []string
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			break
		}
		got = append(got, strings.Trim(strings.TrimSpace(cells[1]), "`"))
	}
	if strings.Join(got, ",") != strings.Join(desired.Reasons, ",") {
		t.Errorf("README reasons %v, want %v", got, desired.Reasons)
	}
}
