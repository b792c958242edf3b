package tlscert_test

import (
	"crypto/tls"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/tlscert"
)

// TestSourceReload: Generate's pair loads; a new pair is served after
// Reload; a broken one is refused with the old kept.
func TestSourceReload(t *testing.T) {
	dir := t.TempDir()
	first, err := tlscert.Generate(dir, []string{"127.0.0.1", "localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, tlscert.CertName), filepath.Join(dir, tlscert.KeyName)
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode())
	}
	src, err := tlscert.NewSource(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := src.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return tlscert.Fingerprint(c.Leaf)
	}
	if got, want := served(), tlscert.Fingerprint(first); got != want {
		t.Fatalf("served %s, want %s", got, want)
	}
	other := t.TempDir()
	second, err := tlscert.Generate(other, []string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{tlscert.CertName, tlscert.KeyName} {
		b, _ := os.ReadFile(filepath.Join(other, n))
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := served(), tlscert.Fingerprint(second); got != want {
		t.Fatalf("after reload served %s, want %s", got, want)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := src.Reload(); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Errorf("broken pair: %v, want an error naming %s", err, keyFile)
	}
	if got, want := served(), tlscert.Fingerprint(second); got != want {
		t.Errorf("after a broken pair served %s, want the old %s", got, want)
	}
}

func TestGenerateExpiredRefused(t *testing.T) {
	dir := t.TempDir()
	if _, err := tlscert.Generate(dir, []string{"localhost"}, time.Now().Add(-6*365*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, err := tlscert.NewSource(filepath.Join(dir, tlscert.CertName), filepath.Join(dir, tlscert.KeyName), slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "expired at") || !strings.Contains(err.Error(), tlscert.CertName) {
		t.Errorf("expired: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := tlscert.Config{CertFile: "a", KeyFile: "b", ClientCAFile: "c", ClientAuth: "require",
		Clients: []tlscert.Client{{Subject: "x", Name: "x", Scopes: []string{"tasks:read"}}}}
	if err := good.Validate(); err != nil {
		t.Errorf("good: %v", err)
	}
	bad := []struct {
		c    tlscert.Config
		want string
	}{
		{tlscert.Config{CertFile: "a"}, "go together"},
		{tlscert.Config{CertFile: "a", KeyFile: "b", ClientAuth: "yes"}, "use none, request or require"},
		{tlscert.Config{CertFile: "a", KeyFile: "b", MinVersion: "1.0"}, "use 1.2 or 1.3"},
		{tlscert.Config{CertFile: "a", KeyFile: "b", ClientCAFile: "c", Clients: []tlscert.Client{{Subject: "x", SAN: "y", Name: "n", Scopes: []string{"admin"}}}}, "exactly one of subject"},
		{tlscert.Config{CertFile: "a", KeyFile: "b", ClientCAFile: "c", Clients: []tlscert.Client{{Subject: "x", Name: "n", Scopes: []string{"root"}}}}, `unknown scope "root"`},
		{tlscert.Config{CertFile: "a", KeyFile: "b", Clients: []tlscert.Client{{Subject: "x", Name: "n", Scopes: []string{"admin"}}}}, "needs tls.client_ca_file"},
	}
	for _, b := range bad {
		if err := b.c.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: %v, want %q", b.c, err, b.want)
		}
	}
}
