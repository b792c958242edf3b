package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/blake2b"
)

// TestSignVerifiesWithMinisign signs a file with a throwaway key and has
// the minisign tool verify it, then a changed file and a trusted comment
// changed by hand fail.
func TestSignVerifiesWithMinisign(t *testing.T) {
	dir := t.TempDir()
	pub, sec, msg := filepath.Join(dir, "k.pub"), filepath.Join(dir, "k.key"), filepath.Join(dir, "SHA256SUMS")
	var out bytes.Buffer
	if err := run([]string{"keygen", "-p", pub, "-s", sec}, &out); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"keygen", "-p", pub, "-s", sec}, &out); err == nil {
		t.Fatal("keygen overwrote an existing key")
	}
	if err := os.WriteFile(msg, []byte("abc  synapse.tar.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"sign", "-s", sec, "-m", msg, "-t", "synapse test"}, &out); err != nil {
		t.Fatal(err)
	}
	sig, err := os.ReadFile(msg + ".minisig")
	if err != nil {
		t.Fatal(err)
	}
	checkOwnVerify(t, pub, msg, sig)

	minisign, err := exec.LookPath("minisign")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("minisign is not installed (scripts/ci-deps.sh installs it)")
		}
		t.Skip("minisign is not installed (scripts/ci-deps.sh --install)")
	}
	if b, err := exec.Command(minisign, "-Vm", msg, "-p", pub).CombinedOutput(); err != nil {
		t.Fatalf("minisign -V: %v\n%s", err, b)
	} else if !strings.Contains(string(b), "Trusted comment: synapse test") {
		t.Errorf("minisign -V printed %q", b)
	}
	if err := os.WriteFile(msg, []byte("abd  synapse.tar.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(minisign, "-Vm", msg, "-p", pub).CombinedOutput(); err == nil {
		t.Fatalf("minisign verified a changed file: %s", b)
	}
	if err := os.WriteFile(msg, []byte("abc  synapse.tar.gz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(sig), "trusted comment: synapse test", "trusted comment: synapse TEST", 1)
	if err := os.WriteFile(msg+".minisig", []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(minisign, "-Vm", msg, "-p", pub).CombinedOutput(); err == nil {
		t.Fatalf("minisign accepted a changed trusted comment: %s", b)
	}
}

// checkOwnVerify checks the signature's layout with crypto/ed25519 alone:
// the key ids agree and both signatures verify.
func checkOwnVerify(t *testing.T, pubPath, msgPath string, sig []byte) {
	t.Helper()
	pubText, err := os.ReadFile(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	pl := strings.Split(strings.TrimSpace(string(pubText)), "\n")
	sl := strings.Split(strings.TrimSpace(string(sig)), "\n")
	if len(pl) != 2 || len(sl) != 4 {
		t.Fatalf("public key %d lines, signature %d lines; want 2 and 4", len(pl), len(sl))
	}
	pk, _ := base64.StdEncoding.DecodeString(pl[1])
	blob, _ := base64.StdEncoding.DecodeString(sl[1])
	global, _ := base64.StdEncoding.DecodeString(sl[3])
	if len(pk) != 42 || string(pk[:2]) != "Ed" || len(blob) != 74 || string(blob[:2]) != "ED" || !bytes.Equal(pk[2:10], blob[2:10]) {
		t.Fatalf("key %x, signature %x: not minisign's layout", pk, blob)
	}
	msg, err := os.ReadFile(msgPath)
	if err != nil {
		t.Fatal(err)
	}
	h := blake2bSum(msg)
	if !ed25519.Verify(pk[10:], h, blob[10:]) {
		t.Error("the file signature does not verify")
	}
	comment := strings.TrimPrefix(sl[2], "trusted comment: ")
	if !ed25519.Verify(pk[10:], append(append([]byte{}, blob[10:]...), comment...), global) {
		t.Error("the global signature does not verify")
	}
}

func blake2bSum(b []byte) []byte {
	h := blake2b.Sum512(b)
	return h[:]
}
