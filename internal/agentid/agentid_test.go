package agentid

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, id := range []string{"cam-1", "a.b_c", strings.Repeat("x", 128)} {
		if err := Check(id); err != nil {
			t.Errorf("Check(%q) = %v", id, err)
		}
	}
	for _, id := range []string{"", "a b", "a/b", "a\x00", "a\x7f", strings.Repeat("x", 129)} {
		if Check(id) == nil {
			t.Errorf("Check(%q) accepted", id)
		}
	}
}

func TestDecodePublicKey(t *testing.T) {
	if k, err := DecodePublicKey("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="); err != nil || len(k) != 32 {
		t.Errorf("32 zero bytes: %v, %v", k, err)
	}
	for _, s := range []string{"", "a2V5", "not base64!", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		if _, err := DecodePublicKey(s); err == nil {
			t.Errorf("DecodePublicKey(%q) accepted", s)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080/": "http://127.0.0.1:8080",
		"https://[::1]:9/base":   "https://[::1]:9/base",
		"mqtt:///gw-1":           "mqtt:///gw-1",
	} {
		if got, err := CheckEndpoint(raw); err != nil || got != want {
			t.Errorf("CheckEndpoint(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "ftp://127.0.0.1", "http://", "http://127.0.0.1/?q=1", "http://u@127.0.0.1",
		"mqtt:///", "mqtt:///a/b", "%zz", "http://127.0.0.1/" + strings.Repeat("x", 2048)} {
		if _, err := CheckEndpoint(raw); err == nil {
			t.Errorf("CheckEndpoint(%q) accepted", raw)
		}
	}
}
