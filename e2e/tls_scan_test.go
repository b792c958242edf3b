package e2e_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTLSScan runs Debian's sslscan against an agent serving TLS: no
// SSLv2, SSLv3, TLS 1.0 or 1.1; TLS 1.2 and 1.3 on; only AEAD suites of
// at least 128 bits with forward secrecy; no renegotiation, no
// compression, no Heartbleed.
func TestTLSScan(t *testing.T) {
	sslscan := needTool(t, "sslscan")
	a := startTLSAgent(t, newTestCA(t, t.TempDir()), "")
	out, err := run(t, "", sslscan, "--no-colour", a.Addr)
	if err != nil {
		t.Fatalf("sslscan: %v\n%s", err, out)
	}
	t.Logf("sslscan:\n%s", out)
	for proto, want := range map[string]string{"SSLv2": "disabled", "SSLv3": "disabled", "TLSv1.0": "disabled", "TLSv1.1": "disabled",
		"TLSv1.2": "enabled", "TLSv1.3": "enabled"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(proto) + `\s+` + want + `$`).MatchString(out) {
			t.Errorf("%s is not %s", proto, want)
		}
	}
	suite := regexp.MustCompile(`(?m)^(?:Preferred|Accepted)\s+(TLSv1\.[23])\s+(\d+) bits\s+(\S+)`)
	found := suite.FindAllStringSubmatch(out, -1)
	if len(found) == 0 {
		t.Fatal("sslscan listed no accepted cipher suite")
	}
	aead := regexp.MustCompile(`^(TLS_(AES_128_GCM|AES_256_GCM|CHACHA20_POLY1305)_SHA\d+|ECDHE-(ECDSA|RSA)-(AES128-GCM-SHA256|AES256-GCM-SHA384|CHACHA20-POLY1305))$`)
	for _, m := range found {
		bits, _ := strconv.Atoi(m[2])
		if bits < 128 || !aead.MatchString(m[3]) {
			t.Errorf("weak suite served: %s %s bits %s", m[1], m[2], m[3])
		}
	}
	for _, bad := range []string{"Insecure session renegotiation supported", "Compression enabled", " vulnerable to heartbleed"} {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, bad) && !strings.Contains(line, "not vulnerable") {
				t.Errorf("sslscan flags: %s", line)
			}
		}
	}
}
