package selfupdate

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/blake2b"
)

// testKey is a release key of the tests: minisign's public key line and
// a signer of minisign's prehashed format (as build/minisign signs).
type testKey struct {
	id   [8]byte
	priv ed25519.PrivateKey
}

func newTestKey(t testing.TB) *testKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := &testKey{priv: priv}
	if _, err := rand.Read(k.id[:]); err != nil {
		t.Fatal(err)
	}
	return k
}

func (k *testKey) pubLine() string {
	return base64.StdEncoding.EncodeToString(append(append([]byte("Ed"), k.id[:]...), k.priv.Public().(ed25519.PublicKey)...))
}

func (k *testKey) public(t testing.TB) PublicKey {
	t.Helper()
	p, err := ParsePublicKey(k.pubLine())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sign is the .minisig text of msg with algorithm alg ("ED": of its
// BLAKE2b-512 hash, "Ed": of the bytes).
func (k *testKey) sign(msg []byte, alg, comment string) []byte {
	signed := msg
	if alg == "ED" {
		h := blake2b.Sum512(msg)
		signed = h[:]
	}
	sig := ed25519.Sign(k.priv, signed)
	global := ed25519.Sign(k.priv, append(bytes.Clone(sig), comment...))
	return fmt.Appendf(nil, "untrusted comment: signature from test key\n%s\ntrusted comment: %s\n%s\n",
		base64.StdEncoding.EncodeToString(append(append([]byte(alg), k.id[:]...), sig...)), comment,
		base64.StdEncoding.EncodeToString(global))
}

// fakeRelease is an executable that prints "synapse VERSION ..." for
// --version, as a release does, and exits 0: the swap's tests need a
// binary that runs, not the agent.
func fakeRelease(version string) []byte {
	return fmt.Appendf(nil, "#!/bin/sh\n# release %s\necho \"synapse %s linux/amd64 go\"\n", version, version)
}

// writeExec writes an executable file.
func writeExec(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// needMinisign returns the minisign tool, skipping without it (failing
// when CI=true: scripts/ci-deps.sh installs it).
func needMinisign(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("minisign")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("minisign is not installed (scripts/ci-deps.sh installs it)")
		}
		t.Skip("minisign is not installed (scripts/ci-deps.sh --install)")
	}
	return p
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listDir(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := filepath.Glob(filepath.Join(dir, ".*"))
	var names []string
	for _, p := range append(m, h...) {
		names = append(names, filepath.Base(p))
	}
	return names
}
