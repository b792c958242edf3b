package desired_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
)

// FuzzDecode: no input panics the decoder or makes it take an oversized
// or shapeless document; a document it takes verifies only if signing
// its own fields again gives its signature, and its config round-trips
// through Sign to a document that decodes to the same fields.
func FuzzDecode(f *testing.F) {
	priv := seedKey(1)
	pub := priv.Public().(ed25519.PublicKey)
	for _, s := range []string{`{}`, `[]`, `{"agent_id":"gw-7"}`, `{"agent_id":"gw-7","version":1,"key":"a","signature":"b","config":{}}`} {
		f.Add([]byte(s))
	}
	for _, v := range []uint64{1, 7, desired.MaxVersion} {
		doc, err := desired.Sign(priv, "gw-7", v, []byte(`{"max_concurrent_tasks":3,"tier1":{"retention_hours":2}}`))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := desired.Decode(raw)
		if err != nil {
			return
		}
		if len(raw) > desired.MaxDocument || d.Version < 1 || d.Version > desired.MaxVersion || len(d.Config) == 0 || d.Config[0] != '{' {
			t.Fatalf("took %d bytes, %+v", len(raw), d)
		}
		_ = d.Verify(d.AgentID, []ed25519.PublicKey{pub})
		again, err := desired.Sign(priv, d.AgentID, d.Version, d.Config)
		if err != nil {
			return // e.g. a config with invalid UTF-8 that Compact keeps: nothing to round-trip
		}
		d2, err := desired.Decode(again)
		if err != nil {
			t.Fatalf("a signed document does not decode: %v\n%s", err, again)
		}
		if d2.AgentID != d.AgentID || d2.Version != d.Version {
			t.Fatalf("round trip: %+v, want %+v", d2, d)
		}
		if err := d2.Verify(d.AgentID, []ed25519.PublicKey{pub}); err != nil {
			t.Fatalf("a signed document does not verify: %v", err)
		}
	})
}
