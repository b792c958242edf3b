package wire_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestBatchSigningInputLayout: four lines, the scheme first, no trailing
// line break, the body's SHA-256 in lowercase hex last.
func TestBatchSigningInputLayout(t *testing.T) {
	body := []byte(`{"messages":[]}`)
	sum := sha256.Sum256(body)
	want := "synapse-batch-sig-v1\nedge_a\nedge_b\n" + hex.EncodeToString(sum[:])
	if got := string(wire.BatchSigningInput("edge_a", "edge_b", body)); got != want {
		t.Errorf("input\n%q\nwant\n%q", got, want)
	}
	// Never the input of an envelope signature.
	if strings.HasPrefix(want, wire.SignatureScheme+"\n") {
		t.Error("the batch input starts like an envelope's")
	}
}

// TestBatchSignature: a batch signature verifies for its sender,
// receiver and body only, and any malformed signature or key is refused
// as ErrBadSignature.
func TestBatchSignature(t *testing.T) {
	priv, pub := sigKey(t)
	body := []byte(`{"messages":[{"seq":1,"envelope":{}}]}`)
	sig, err := wire.SignBatch(priv, "edge_a", "edge_b", body)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.VerifyBatch(pub, "edge_a", "edge_b", body, sig); err != nil {
		t.Fatalf("VerifyBatch: %v", err)
	}
	_, other, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPub := other.Public().(ed25519.PublicKey)
	flipped := []byte(sig)
	flipped[3] ^= 1
	changed := append([]byte(nil), body...)
	changed[len(changed)-3] = '1'
	for name, c := range map[string]struct {
		pub              ed25519.PublicKey
		sender, receiver string
		body             []byte
		sig              string
	}{
		"other body":     {pub, "edge_a", "edge_b", changed, sig},
		"other receiver": {pub, "edge_a", "edge_c", body, sig},
		"other sender":   {pub, "edge_c", "edge_b", body, sig},
		"other key":      {otherPub, "edge_a", "edge_b", body, sig},
		"flipped bit":    {pub, "edge_a", "edge_b", body, string(flipped)},
		"empty":          {pub, "edge_a", "edge_b", body, ""},
		"not base64":     {pub, "edge_a", "edge_b", body, strings.Repeat("!", len(sig))},
		"short":          {pub, "edge_a", "edge_b", body, sig[:len(sig)-4]},
		"bad key":        {pub[:8], "edge_a", "edge_b", body, sig},
		"line break":     {pub, "edge_a\nedge_b", "edge_b", body, sig},
	} {
		if err := wire.VerifyBatch(c.pub, c.sender, c.receiver, c.body, c.sig); !errors.Is(err, wire.ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
	if _, err := wire.SignBatch(priv[:10], "edge_a", "edge_b", body); err == nil {
		t.Error("SignBatch took a short key")
	}
	if _, err := wire.SignBatch(priv, "edge_a", "edge_b\r", body); !errors.Is(err, wire.ErrEnvelopeInvalid) {
		t.Errorf("SignBatch with a line break: %v", err)
	}
}
