package selfupdate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/blake2b"
)

func blakeOf(b []byte) []byte {
	h := blake2b.Sum512(b)
	return h[:]
}

func TestVerify(t *testing.T) {
	k, other := newTestKey(t), newTestKey(t)
	msg := []byte("a release binary")
	sig, err := ParseSignature(k.sign(msg, "ED", "timestamp:1\tfile:synapse\thashed"))
	if err != nil {
		t.Fatal(err)
	}
	keys := []PublicKey{other.public(t), k.public(t)}
	if err := sig.Verify(keys, blakeOf(msg)); err != nil {
		t.Fatalf("a good signature: %v", err)
	}
	if err := sig.Verify(keys, blakeOf([]byte("a release binarY"))); err == nil || !strings.Contains(err.Error(), "does not match the file") {
		t.Fatalf("a changed file: %v", err)
	}
	if err := sig.Verify([]PublicKey{other.public(t)}, blakeOf(msg)); err == nil || !strings.Contains(err.Error(), "is not one of the 1 release key") {
		t.Fatalf("an untrusted key: %v", err)
	}
	// The same key id with another key (a forged id) fails the signature.
	forged := other.public(t)
	forged.ID = k.id
	if err := sig.Verify([]PublicKey{forged}, blakeOf(msg)); err == nil {
		t.Fatal("a forged key id verified")
	}
	// A changed trusted comment fails the global signature.
	sig.TrustedComment += "x"
	if err := sig.Verify(keys, blakeOf(msg)); err == nil || !strings.Contains(err.Error(), "trusted comment") {
		t.Fatalf("a changed trusted comment: %v", err)
	}
}

func TestParseSignatureRefuses(t *testing.T) {
	k := newTestKey(t)
	good := k.sign([]byte("x"), "ED", "c")
	lines := strings.Split(string(good), "\n")
	cases := map[string]string{
		"empty":          "",
		"legacy":         string(k.sign([]byte("x"), "Ed", "c")),
		"three lines":    strings.Join(lines[:3], "\n"),
		"no untrusted":   "x" + string(good),
		"bad base64":     lines[0] + "\n!!!\n" + lines[2] + "\n" + lines[3],
		"short sig":      lines[0] + "\nRUQ=\n" + lines[2] + "\n" + lines[3],
		"no trusted":     lines[0] + "\n" + lines[1] + "\ncomment: c\n" + lines[3],
		"short global":   lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\nAAAA",
		"huge":           strings.Repeat("a", MaxSignatureBytes+1),
		"not utf8":       "\xff\xfe" + string(good),
		"five lines":     string(good) + "more\n",
		"unknown algo":   lines[0] + "\n" + "WF" + lines[1][2:] + "\n" + lines[2] + "\n" + lines[3],
		"binary garbage": "\x00\x01\x02\n\x03\n\x04\n\x05",
	}
	for name, in := range cases {
		if _, err := ParseSignature([]byte(in)); err == nil {
			t.Errorf("%s: parsed", name)
		} else if !strings.HasPrefix(err.Error(), "signature: ") {
			t.Errorf("%s: error %q does not say it is the signature", name, err)
		}
	}
	if _, err := ParseSignature(k.sign([]byte("x"), "Ed", "c")); err == nil || !strings.Contains(err.Error(), "legacy") {
		t.Errorf("legacy: %v", err)
	}
	if _, err := ParseSignature(bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n"))); err != nil {
		t.Errorf("CRLF lines: %v", err)
	}
}

func TestParsePublicKeys(t *testing.T) {
	a, b := newTestKey(t), newTestKey(t)
	text := "untrusted comment: minisign public key A\n" + a.pubLine() + "\n\nuntrusted comment: B\n" + b.pubLine() + "\n"
	keys, err := ParsePublicKeys(text)
	if err != nil || len(keys) != 2 || keys[1].ID != b.id {
		t.Fatalf("two keys: %v %v", keys, err)
	}
	for name, in := range map[string]string{
		"none":      "untrusted comment: x\n",
		"not b64":   "untrusted comment: x\nnot-base64!\n",
		"short":     "RWQ=\n",
		"secret":    "synapse-minisign-secret-key\n" + a.pubLine(),
		"wrong alg": "RUQ" + a.pubLine()[3:],
	} {
		if _, err := ParsePublicKeys(in); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// TestMinisignTool checks both ways against the minisign tool: its
// prehashed signatures verify here (and its legacy ones are refused), and
// what build/minisign makes (the format of the tests' signer) verifies
// with minisign -V -H (prehashed required).
func TestMinisignTool(t *testing.T) {
	ms := needMinisign(t)
	dir := t.TempDir()
	pub, sec, bin := filepath.Join(dir, "k.pub"), filepath.Join(dir, "k.key"), filepath.Join(dir, "synapse")
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(ms, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("minisign %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("-G", "-W", "-p", pub, "-s", sec)
	msg := bytes.Repeat([]byte("binary "), 10000)
	if err := os.WriteFile(bin, msg, 0o755); err != nil {
		t.Fatal(err)
	}
	run("-S", "-s", sec, "-m", bin, "-t", "synapse v2")
	keys, err := ParsePublicKeys(string(readFile(t, pub)))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := ParseSignature(readFile(t, bin+".minisig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sig.Verify(keys, blakeOf(msg)); err != nil || sig.TrustedComment != "synapse v2" {
		t.Fatalf("minisign's signature: %v (comment %q)", err, sig.TrustedComment)
	}
	run("-S", "-l", "-s", sec, "-m", bin, "-x", bin+".legacy")
	if _, err := ParseSignature(readFile(t, bin+".legacy")); err == nil {
		t.Fatal("minisign's legacy signature was taken")
	}

	k := newTestKey(t)
	if err := os.WriteFile(pub, []byte("untrusted comment: test\n"+k.pubLine()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin+".minisig", k.sign(msg, "ED", "synapse v3"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("-V", "-H", "-p", pub, "-m", bin)
	if err := os.WriteFile(bin, append(msg, '!'), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ms, "-V", "-p", pub, "-m", bin).CombinedOutput(); err == nil {
		t.Fatalf("minisign verified a changed file: %s", out)
	}
}
