package tlspin_test

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/tlspin"
)

func TestNormalize(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	colon := strings.ToUpper(strings.TrimSuffix(strings.Repeat("AB:", 32), ":"))
	for _, in := range []string{hex, strings.ToUpper(hex), colon} {
		got, err := tlspin.Normalize(in)
		if err != nil || got != hex {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, hex)
		}
	}
	for _, in := range []string{"", "ab", hex + "00", strings.Repeat("zz", 32), strings.Repeat("a", 1<<16)} {
		if _, err := tlspin.Normalize(in); err == nil {
			t.Errorf("Normalize(%.80q) accepted", in)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add(strings.Repeat("ab", 32))
	f.Add(strings.TrimSuffix(strings.Repeat("AB:", 32), ":"))
	f.Add("zz")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := tlspin.Normalize(s)
		if err != nil {
			return
		}
		again, err := tlspin.Normalize(got)
		if err != nil || again != got || len(got) != 64 {
			t.Fatalf("%q -> %q -> %q, %v", s, got, again, err)
		}
	})
}

// TestConfig handshakes with a real server: its own fingerprint is
// accepted without any CA, another one fails with a MismatchError naming
// both.
func TestConfig(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	good := tlspin.Fingerprint(srv.Certificate())
	if good != tlspin.Sum(srv.Certificate().Raw) || len(good) != 64 {
		t.Fatalf("Fingerprint %q", good)
	}
	addr := srv.Listener.Addr().String()
	dial := func(pin string) error {
		c, err := tls.Dial("tcp", addr, tlspin.Config(pin))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(good); err != nil {
		t.Fatalf("handshake under the server's fingerprint: %v", err)
	}
	other := strings.Repeat("0", 64)
	err := dial(other)
	var mm *tlspin.MismatchError
	if !errors.Is(err, tlspin.ErrMismatch) || !errors.As(err, &mm) || mm.Got != good || mm.Pinned != other {
		t.Fatalf("handshake under another fingerprint: %v; want a MismatchError got %s", err, good)
	}
	if !strings.Contains(err.Error(), good) || !strings.Contains(err.Error(), other) {
		t.Errorf("error %q does not name both fingerprints", err)
	}
}
