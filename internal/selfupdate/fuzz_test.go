package selfupdate

import (
	"testing"
)

// FuzzParseSignature: any bytes give a signature or an error, never a
// panic; a parsed one is prehashed with whole signatures.
func FuzzParseSignature(f *testing.F) {
	k := newTestKey(f)
	f.Add(k.sign([]byte("x"), "ED", "timestamp:1\tfile:synapse\thashed"))
	f.Add(k.sign([]byte("x"), "Ed", "c"))
	f.Add([]byte("untrusted comment: x\nRUQ=\ntrusted comment: \nAAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSignature(b)
		if err != nil {
			return
		}
		if s.Algorithm != "ED" || len(s.Sig) != 64 || len(s.Global) != 64 {
			t.Fatalf("parsed %+v", s)
		}
		_ = s.Verify([]PublicKey{k.public(t)}, blakeOf(b))
	})
}

// FuzzParsePublicKeys: any text gives keys of 32 bytes or an error.
func FuzzParsePublicKeys(f *testing.F) {
	k := newTestKey(f)
	f.Add("untrusted comment: minisign public key\n" + k.pubLine() + "\n")
	f.Add("RWQ=\n")
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParsePublicKeys(s)
		if err != nil {
			return
		}
		for _, k := range keys {
			if len(k.Key) != 32 {
				t.Fatalf("key of %d bytes", len(k.Key))
			}
		}
	})
}
