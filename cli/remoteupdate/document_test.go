package remoteupdate

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
)

const testMinisig = "untrusted comment: signature from minisign secret key\n" +
	"RUQ7/wTnvJ6S9vjsvLAADM4GGpfxmoh/ymzn0UbkuA0oYEzFvi/5jCH19C9Bjd/bBvnVIK8aC2Y3piejAGZMpPQZB1aN1rucNgc=\n" +
	"trusted comment: timestamp:1796083200\tfile:synapse\thashed\n" +
	"cC4UOFEL3oq6gW8iw6LpT9d8QZF+A0Hqp7B1tp/KhHFXn87yzGcPpEcGHPMYTyeEec9j+WFBCSg+SyMPcjcwDg==\n"

var testSHA = strings.Repeat("ab", 32)

func TestSignVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	doc, err := Sign(priv, "gw-1", 7, "https://releases.example/synapse", testSHA, testMinisig)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify("gw-1", []ed25519.PublicKey{other, pub}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if err := d.Verify("gw-2", []ed25519.PublicKey{pub}); err == nil || !strings.Contains(err.Error(), "for agent") {
		t.Fatalf("another agent: %v", err)
	}
	if err := d.Verify("gw-1", []ed25519.PublicKey{other}); err == nil || !strings.Contains(err.Error(), "operator_keys") {
		t.Fatalf("unknown key: %v", err)
	}
	// Every signed member counts.
	for _, change := range []func(*Document){
		func(d *Document) { d.Version++ },
		func(d *Document) { d.URL += "x" },
		func(d *Document) { d.SHA256 = strings.Repeat("cd", 32) },
		func(d *Document) { d.Minisig = strings.Replace(d.Minisig, "hashed", "hashed!", 1) },
	} {
		c := *d
		change(&c)
		if err := c.Verify("gw-1", []ed25519.PublicKey{pub}); err == nil || !strings.Contains(err.Error(), "does not verify") {
			t.Errorf("a changed document verified: %v", err)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	good, err := Sign(priv, "gw-1", 1, "http://127.0.0.1/s", testSHA, testMinisig)
	if err != nil {
		t.Fatal(err)
	}
	g := string(good)
	for name, in := range map[string]string{
		"empty":        "",
		"array":        "[]",
		"not json":     "{",
		"unknown":      strings.Replace(g, `"url"`, `"uri"`, 1),
		"twice":        strings.Replace(g, `{"agent_id":"gw-1",`, `{"agent_id":"gw-1","agent_id":"gw-1",`, 1),
		"two values":   g + "{}",
		"version 0":    strings.Replace(g, `"version":1`, `"version":0`, 1),
		"huge version": strings.Replace(g, `"version":1`, `"version":9007199254740993`, 1),
		"ftp":          strings.Replace(g, `"http://127.0.0.1/s"`, `"ftp://127.0.0.1/s"`, 1),
		"no host":      strings.Replace(g, `"http://127.0.0.1/s"`, `"http:///s"`, 1),
		"short sha":    strings.Replace(g, testSHA, "abcd", 1),
		"not hex":      strings.Replace(g, testSHA, strings.Repeat("zz", 32), 1),
		"bad minisig":  strings.Replace(g, "trusted comment:", "comment:", 1),
		"no signature": strings.Replace(g, `"signature":"`, `"signature":"","x":"`, 1),
		"agent slash":  strings.Replace(g, `"gw-1"`, `"gw/1"`, 1),
		"huge":         `{"agent_id":"` + strings.Repeat("a", MaxDocument) + `"}`,
		"not utf8":     "{\"agent_id\":\"\xff\"}",
	} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// FuzzDecode: any bytes decode to a well-formed document or an error.
func FuzzDecode(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	good, _ := Sign(priv, "gw-1", 1, "http://127.0.0.1/s", testSHA, testMinisig)
	f.Add(good)
	f.Add([]byte(`{"agent_id":"gw-1","version":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			return
		}
		if d.Version < 1 || len(d.SHA256) != 64 || d.Key == "" || d.Signature == "" {
			t.Fatalf("decoded %+v", d)
		}
		_ = d.Verify(d.AgentID, nil)
	})
}
