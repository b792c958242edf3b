package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/handlers"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/tier1test"
	"github.com/synapse-edge/synapse/internal/tlscert"
)

// TestConsoleOverTLS (issue 34): Chromium loads the console from an agent
// serving TLS with a certificate of a test CA, trusted through the NSS
// database of its HOME, without an interstitial: the page is the
// console's sign-in form in a secure context. The same browser without
// the CA gets Chromium's certificate error page instead.
func TestConsoleOverTLS(t *testing.T) {
	bin := chromiumPath(t)
	certutil, err := exec.LookPath("certutil")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("certutil is missing; CI installs libnss3-tools with scripts/ci-deps.sh")
		}
		t.Skip("certutil is not installed (apt-get install libnss3-tools)")
	}
	dir := t.TempDir()
	caFile := writeTestPKI(t, dir)
	ts, err := tlscert.NewServer(&tlscert.Config{CertFile: filepath.Join(dir, "agent.crt"), KeyFile: filepath.Join(dir, "agent.key")}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.AdminToken = adminToken
	t1 := tier1test.Service(t, agent.Options{})
	a, err := agent.New(cfg, agent.Options{Tier1: t1})
	if err != nil {
		t.Fatal(err)
	}
	if err := handlers.Register(a, handlers.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Open(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.New(a, httpapi.Options{TLS: ts.TLS, Tier1: t1})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		_ = a.Close(ctx)
	})
	url := "https://" + ln.Addr().String() + "/"

	home := t.TempDir()
	db := "sql:" + filepath.Join(home, ".pki", "nssdb")
	if err := os.MkdirAll(filepath.Join(home, ".pki", "nssdb"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-N", "-d", db, "--empty-password"},
		{"-A", "-d", db, "-n", "synapse test CA", "-t", "C,,", "-i", caFile},
	} {
		if out, err := exec.Command(certutil, args...).CombinedOutput(); err != nil {
			t.Fatalf("certutil %v: %v\n%s", args, err, out)
		}
	}
	b := startBrowserEnv(t, bin, []string{"HOME=" + home})
	b.call("Runtime.enable", nil)
	b.call("Page.enable", nil)
	b.call("Page.navigate", map[string]any{"url": url})
	b.waitJS("the sign-in form over https", `document.readyState === "complete" && location.protocol === "https:" &&
		window.isSecureContext && !!document.querySelector("#login-view") && !document.querySelector("#login-view").hidden`)
	var href string
	b.eval(`location.href`, &href)
	if href != url {
		t.Errorf("the page is %s, want %s", href, url)
	}
	if p := b.pageProblems(); len(p) > 0 {
		t.Errorf("page problems: %v", p)
	}

	// Without the CA: Chromium's certificate error, not the console.
	other := startBrowserEnv(t, bin, []string{"HOME=" + t.TempDir()})
	other.call("Runtime.enable", nil)
	other.call("Page.enable", nil)
	other.call("Page.navigate", map[string]any{"url": url})
	testutil.Eventually(t, pollTimeout, "the certificate error page without the CA", func() bool {
		var h string
		other.eval(`location.href`, &h)
		return len(h) > 13 && h[:13] == "chrome-error:"
	})
}

// writeTestPKI writes a test CA (ca.crt) and a server pair it signed for
// 127.0.0.1 (agent.crt, agent.key) into dir, and returns ca.crt's path.
func writeTestPKI(t *testing.T, dir string) string {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "synapse test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	for name, blk := range map[string]*pem.Block{
		"ca.crt": {Type: "CERTIFICATE", Bytes: caDER}, "agent.crt": {Type: "CERTIFICATE", Bytes: der}, "agent.key": {Type: "PRIVATE KEY", Bytes: kder},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(blk), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "ca.crt")
}
