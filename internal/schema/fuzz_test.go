package schema_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/schema"
)

// FuzzValidate compiles the fuzzer's schema and validates its instance: it
// must never panic, and what it reports must be well formed and repeatable.
// Seeds are in testdata/fuzz/FuzzValidate.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"type":"object","required":["ms"],"properties":{"ms":{"type":"integer","minimum":0}}}`), []byte(`{"ms":-1}`))
	f.Add([]byte(`{"uniqueItems":true,"items":{"anyOf":[{"type":"string","pattern":"^a"},{"multipleOf":0.5}]}}`), []byte(`[1.5,"ab",1.5]`))
	f.Fuzz(func(t *testing.T, schemaDoc, instance []byte) {
		s, err := schema.Compile(schemaDoc)
		if err != nil {
			if s != nil {
				t.Fatal("Compile returned a schema and an error")
			}
			return
		}
		vs, err := s.Validate(instance)
		if err != nil {
			if vs != nil {
				t.Fatal("Validate returned violations and an error")
			}
			return
		}
		if len(vs) > 100 {
			t.Fatalf("%d violations, more than the cap of 100", len(vs))
		}
		for _, v := range vs {
			if v.Path != "" && !strings.HasPrefix(v.Path, "/") {
				t.Fatalf("violation path %q is not a JSON pointer", v.Path)
			}
			if v.Missing && v.Path == "" {
				t.Fatal("a missing property without a path")
			}
			if v.Message == "" {
				t.Fatalf("violation at %q without a message", v.Path)
			}
		}
		again, err := s.Validate(instance)
		if err != nil || !reflect.DeepEqual(vs, again) {
			t.Fatalf("second Validate differs: %v, %v then %v", vs, err, again)
		}
	})
}
