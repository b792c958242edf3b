package rawjson_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/synapse-edge/synapse/internal/rawjson"
)

var asIsCases = []struct {
	name string
	v    string
	want bool
}{
	{"object", `{"a":1,"b":[true,null]}`, true},
	{"space in a string", `{"message":"sent to edge_b"}`, true},
	{"escaped quote then space", `"a\" b"`, true},
	{"escaped backslash then space outside", `"a\\" `, false},
	{"escaped backslash, space inside", `"a\\ b"`, true},
	{"escape spelled out", `"\u2028 \u003c"`, true},
	{"space between tokens", `{"a": 1}`, false},
	{"space before", ` {}`, false},
	{"newline after", "{}\n", false},
	{"tab in a string", "\"a\tb\"", false},
	{"newline in a string", "\"a\nb\"", false},
	{"less-than in a string", `"a<b"`, false},
	{"ampersand", `{"a":"&"}`, false},
	{"U+2028 in a string", "\"a\u2028b\"", false},
	{"U+2029 in a string", "\"a\u2029b\"", false},
	{"other 0xe2 rune", "\"a\u2022b\"", false},
	{"string left open", `"a b`, false},
	{"string left open after a backslash", `"a \`, false},
	{"empty", ``, true},
}

func TestAsIs(t *testing.T) {
	for _, tc := range asIsCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rawjson.AsIs([]byte(tc.v)); got != tc.want {
				t.Fatalf("AsIs(%q) = %v, want %v", tc.v, got, tc.want)
			}
			if tc.want && json.Valid([]byte(tc.v)) {
				if m, _ := json.Marshal(json.RawMessage(tc.v)); !bytes.Equal(m, []byte(tc.v)) {
					t.Fatalf("as is, but encoding/json makes %q of it", m)
				}
			}
		})
	}
}

// FuzzAsIs: what AsIs passes, encoding/json leaves as it
// is.
func FuzzAsIs(f *testing.F) {
	for _, tc := range asIsCases {
		f.Add([]byte(tc.v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !rawjson.AsIs(v) || !json.Valid(v) {
			return
		}
		m, err := json.Marshal(json.RawMessage(v))
		if err != nil || !bytes.Equal(m, v) {
			t.Fatalf("AsIs(%q), but encoding/json makes %q of it (%v)", v, m, err)
		}
	})
}

func BenchmarkAsIs(b *testing.B) {
	v := []byte(`{"from":"idle","message":"sent to edge_executor_3e854e","progress":0,"status":"pending","task_id":"01a23c63-4f62-797c-a50d-a2ffc3990fca"}`)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if !rawjson.AsIs(v) {
			b.Fatal("not as is")
		}
	}
}
