package encrypt_test

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
	"github.com/synapse-edge/synapse/wire/encrypt"
)

// encVectorFile is the layout of testdata/vectors/encryption.json, written
// by an independent implementation.
type encVectorFile struct {
	Keys map[string]struct {
		Seed       string `json:"ed25519_seed_hex"`
		EdPublic   string `json:"ed25519_public_hex"`
		XPrivate   string `json:"x25519_private_hex"`
		XPublicHex string `json:"x25519_public_hex"`
	} `json:"keys"`
	EphemeralPrivate string `json:"ephemeral_private_hex"`
	EphemeralPublic  string `json:"ephemeral_public_hex"`
	Nonce            string `json:"nonce_hex"`
	Cases            []struct {
		Name        string                   `json:"name"`
		MessageID   string                   `json:"message_id"`
		MessageType wire.MessageType         `json:"message_type"`
		Sender      string                   `json:"sender"`
		Receiver    string                   `json:"receiver"`
		Field       string                   `json:"field"`
		AAD         string                   `json:"aad"`
		Plaintext   string                   `json:"plaintext_hex"`
		ContentType string                   `json:"content_type"`
		Encrypted   encrypt.EncryptedPayload `json:"encrypted_payload"`
	} `json:"cases"`
}

func loadEncVectors(t testing.TB) *encVectorFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "vectors", "encryption.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v encVectorFile
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("encryption.json: %v", err)
	}
	if len(v.Cases) == 0 || len(v.Keys) != 2 {
		t.Fatalf("encryption.json has %d cases and %d keys", len(v.Cases), len(v.Keys))
	}
	return &v
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

// TestEncryptionKeyConversion checks the Ed25519 → X25519 conversion of
// both halves of a key pair against the vectors.
func TestEncryptionKeyConversion(t *testing.T) {
	v := loadEncVectors(t)
	for name, k := range v.Keys {
		t.Run(name, func(t *testing.T) {
			priv := ed25519.NewKeyFromSeed(unhex(t, k.Seed))
			if got, want := hex.EncodeToString(priv.Public().(ed25519.PublicKey)), k.EdPublic; got != want {
				t.Fatalf("Ed25519 public key = %s, want %s", got, want)
			}
			xpriv, err := encrypt.X25519PrivateKey(priv)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := hex.EncodeToString(xpriv.Bytes()), k.XPrivate; got != want {
				t.Errorf("X25519 private key = %s, want %s", got, want)
			}
			if got, want := hex.EncodeToString(xpriv.PublicKey().Bytes()), k.XPublicHex; got != want {
				t.Errorf("X25519 public key of the private key = %s, want %s", got, want)
			}
			xpub, err := encrypt.X25519PublicKey(unhex(t, k.EdPublic))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := hex.EncodeToString(xpub.Bytes()), k.XPublicHex; got != want {
				t.Errorf("X25519 public key converted from Ed25519 = %s, want %s", got, want)
			}
		})
	}
	t.Run("random pairs agree", func(t *testing.T) {
		for range 20 {
			pub, priv, _ := ed25519.GenerateKey(rand.Reader)
			xpriv, err := encrypt.X25519PrivateKey(priv)
			if err != nil {
				t.Fatal(err)
			}
			xpub, err := encrypt.X25519PublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			if !xpub.Equal(xpriv.PublicKey()) {
				t.Fatalf("key %x: converted public key differs from the private key's", pub)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		neutral := make([]byte, 32)
		neutral[0] = 1 // y = 1
		notCanonical := bytes.Repeat([]byte{0xff}, 32)
		notCanonical[31] = 0x7f // y = 2^255 - 1 ≥ p
		for name, k := range map[string][]byte{"short": make([]byte, 31), "neutral": neutral, "not canonical": notCanonical} {
			if _, err := encrypt.X25519PublicKey(k); !errors.Is(err, encrypt.ErrBadKey) {
				t.Errorf("%s: X25519PublicKey err = %v, want ErrBadKey", name, err)
			}
		}
	})
}

// TestEncryptionVectors seals with the vectors' ephemeral key and nonce and
// compares byte for byte, then opens each case with the recipient's key.
func TestEncryptionVectors(t *testing.T) {
	v := loadEncVectors(t)
	rcpt := ed25519.NewKeyFromSeed(unhex(t, v.Keys["recipient"].Seed))
	rpriv, err := encrypt.X25519PrivateKey(rcpt)
	if err != nil {
		t.Fatal(err)
	}
	rpub, err := encrypt.X25519PublicKey(rcpt.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	eph, err := ecdh.X25519().NewPrivateKey(unhex(t, v.EphemeralPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(eph.PublicKey().Bytes()); got != v.EphemeralPublic {
		t.Fatalf("ephemeral public key = %s, want %s", got, v.EphemeralPublic)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			m := &wire.UnifiedSynapseMessage{MessageID: c.MessageID, MessageType: c.MessageType,
				Sender: wire.AgentRef{AgentID: c.Sender}, Receiver: wire.AgentRef{AgentID: c.Receiver}}
			aad := encrypt.EncryptionAAD(m, c.Field)
			if string(aad) != c.AAD {
				t.Fatalf("EncryptionAAD = %q, want %q", aad, c.AAD)
			}
			pt := unhex(t, c.Plaintext)
			got, err := encrypt.SealPayloadWith(eph, unhex(t, v.Nonce), rpub, pt, c.ContentType, aad)
			if err != nil {
				t.Fatal(err)
			}
			if *got != c.Encrypted {
				t.Errorf("sealed = %+v\nwant     %+v", *got, c.Encrypted)
			}
			open, cty, err := c.Encrypted.Open(rpriv, aad)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(open, pt) || cty != c.ContentType {
				t.Errorf("Open = %x (%s), want %x (%s)", open, cty, pt, c.ContentType)
			}
		})
	}
}

func sealTestKeys(t testing.TB) (*ecdh.PrivateKey, *ecdh.PublicKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	xpriv, err := encrypt.X25519PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	xpub, err := encrypt.X25519PublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return xpriv, xpub
}

// TestSealOpen: a fresh ephemeral key and nonce per call, and every change
// to what was sealed or to its context fails with ErrDecrypt.
func TestSealOpen(t *testing.T) {
	priv, pub := sealTestKeys(t)
	other, _ := sealTestKeys(t)
	aad := []byte("context")
	pt := []byte(`{"secret":"plaintext marker"}`)
	a, err := encrypt.SealPayload(pub, pt, "", aad)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encrypt.SealPayload(pub, pt, "", aad)
	if err != nil {
		t.Fatal(err)
	}
	if a.EPK == b.EPK || a.Nonce == b.Nonce || a.Ciphertext == b.Ciphertext {
		t.Errorf("two seals share an ephemeral key, nonce or ciphertext: %+v %+v", a, b)
	}
	if strings.Contains(a.Ciphertext, "plaintext") {
		t.Errorf("ciphertext %q shows the plaintext", a.Ciphertext)
	}
	got, cty, err := a.Open(priv, aad)
	if err != nil || !bytes.Equal(got, pt) || cty != wire.ContentJSON {
		t.Fatalf("Open = %q, %q, %v; want the plaintext as JSON", got, cty, err)
	}

	flip := func(s string, i int) string {
		raw, _ := base64.StdEncoding.DecodeString(s)
		raw[i%len(raw)] ^= 1
		return base64.StdEncoding.EncodeToString(raw)
	}
	for _, tc := range []struct {
		name string
		edit func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey)
	}{
		{"ciphertext bit", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) {
			e.Ciphertext = flip(e.Ciphertext, 3)
			return aad, priv
		}},
		{"tag bit", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) {
			e.Ciphertext = flip(e.Ciphertext, -1+len(pt)+16)
			return aad, priv
		}},
		{"nonce", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) {
			e.Nonce = flip(e.Nonce, 0)
			return aad, priv
		}},
		{"epk", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { e.EPK = flip(e.EPK, 5); return aad, priv }},
		{"other context", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { return []byte("other"), priv }},
		{"other recipient", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { return aad, other }},
		{"alg", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { e.Alg = "none"; return aad, priv }},
		{"short nonce", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { e.Nonce = "AAAA"; return aad, priv }},
		{"not base64", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { e.Ciphertext = "@@@@"; return aad, priv }},
		{"truncated", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { e.Ciphertext = "AAAA"; return aad, priv }},
		{"bad cty", func(e *encrypt.EncryptedPayload) ([]byte, *ecdh.PrivateKey) { e.ContentType = "/"; return aad, priv }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := *a
			ctx, key := tc.edit(&e)
			if got, _, err := e.Open(key, ctx); !errors.Is(err, encrypt.ErrDecrypt) {
				t.Errorf("Open = %q, %v; want ErrDecrypt", got, err)
			}
		})
	}
}

func TestEncryptedContentTypes(t *testing.T) {
	if !encrypt.IsEncrypted(encrypt.ContentEncrypted) || !encrypt.IsEncrypted(encrypt.ContentEncrypted+"; charset=utf-8") {
		t.Error("IsEncrypted(ContentEncrypted) = false")
	}
	for _, ct := range []string{"", wire.ContentJSON, "application/vnd.synapse.encrypted+jsonx", "bogus;;"} {
		if encrypt.IsEncrypted(ct) {
			t.Errorf("IsEncrypted(%q) = true", ct)
		}
	}
	ct := encrypt.PrivateContentType([]string{"ssn", "dob"})
	if got, want := encrypt.PrivateFields(ct), []string{"ssn", "dob"}; !slices.Equal(got, want) {
		t.Errorf("PrivateFields(%q) = %v, want %v", ct, got, want)
	}
	for _, ct := range []string{"", wire.ContentJSON, "garbage;;;"} {
		if got := encrypt.PrivateFields(ct); got != nil {
			t.Errorf("PrivateFields(%q) = %v, want none", ct, got)
		}
	}
}

// FuzzEncryptedPayload decodes arbitrary payload bytes as an encrypted
// payload and opens them; and round trips the input as a plaintext.
func FuzzEncryptedPayload(f *testing.F) {
	v := loadEncVectors(f)
	for _, c := range v.Cases {
		b, _ := json.Marshal(c.Encrypted)
		f.Add(b)
	}
	f.Add([]byte(`{"alg":"X25519-HKDF-SHA256-ChaCha20-Poly1305","epk":"","nonce":"","ciphertext":""}`))
	f.Add([]byte(`[]`))
	priv, pub := sealTestKeys(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := wire.RawJSONPayload(b); err == nil {
			if e, err := encrypt.DecodeEncryptedPayload(p); err == nil {
				if _, _, err := e.Open(priv, nil); !errors.Is(err, encrypt.ErrDecrypt) {
					t.Fatalf("opening a payload sealed for nobody: %v", err)
				}
			} else if !errors.Is(err, encrypt.ErrDecrypt) {
				t.Fatalf("DecodeEncryptedPayload error %v does not wrap ErrDecrypt", err)
			}
		}
		if len(b) > 1<<16 {
			return
		}
		e, err := encrypt.SealPayload(pub, b, wire.ContentMsgpack, b)
		if err != nil {
			t.Fatal(err)
		}
		got, cty, err := e.Open(priv, b)
		if err != nil || !bytes.Equal(got, b) || cty != wire.ContentMsgpack {
			t.Fatalf("round trip of %x: %x %q %v", b, got, cty, err)
		}
	})
}

func BenchmarkSealOpen(b *testing.B) {
	priv, pub := sealTestKeys(b)
	pt := bytes.Repeat([]byte(`{"k":"v"},`), 100)
	aad := []byte("aad")
	b.SetBytes(int64(len(pt)))
	b.ReportAllocs()
	for b.Loop() {
		e, err := encrypt.SealPayload(pub, pt, "", aad)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := e.Open(priv, aad); err != nil {
			b.Fatal(err)
		}
	}
}
