package schema_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/schema"
)

// compile compiles a schema the test knows is valid.
func compile(t testing.TB, doc string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(doc))
	if err != nil {
		t.Fatalf("Compile(%s): %v", doc, err)
	}
	return s
}

// validate returns the violations of instance, failing on a decode error.
func validate(t testing.TB, s *schema.Schema, instance string) []schema.Violation {
	t.Helper()
	vs, err := s.Validate([]byte(instance))
	if err != nil {
		t.Fatalf("Validate(%s): %v", instance, err)
	}
	return vs
}

// Each keyword with an instance that passes and one that fails.
func TestKeywords(t *testing.T) {
	tests := []struct {
		name, schema, valid, invalid string
	}{
		{"type string", `{"type":"string"}`, `"x"`, `1`},
		{"type number", `{"type":"number"}`, `1.5`, `"1.5"`},
		{"type number accepts integers", `{"type":"number"}`, `7`, `true`},
		{"type integer", `{"type":"integer"}`, `3`, `3.5`},
		{"type integer accepts 3.0", `{"type":"integer"}`, `3.0`, `"3"`},
		{"type integer exponent", `{"type":"integer"}`, `1e3`, `1e-3`},
		{"type boolean", `{"type":"boolean"}`, `false`, `0`},
		{"type null", `{"type":"null"}`, `null`, `false`},
		{"type object", `{"type":"object"}`, `{}`, `[]`},
		{"type array", `{"type":"array"}`, `[]`, `{}`},
		{"type list", `{"type":["string","null"]}`, `null`, `1`},
		{"enum", `{"enum":["a",1,null,{"k":[1]}]}`, `{"k":[1.0]}`, `"b"`},
		{"enum number by value", `{"enum":[1]}`, `1.0`, `"1"`},
		{"const", `{"const":{"a":[1,"x"]}}`, `{"a":[1,"x"]}`, `{"a":[1,"y"]}`},
		{"const null", `{"const":null}`, `null`, `0`},
		{"const false", `{"const":false}`, `false`, `null`},
		{"required", `{"required":["a","b"]}`, `{"a":1,"b":null}`, `{"a":1}`},
		{"required ignores non-objects", `{"required":["a"]}`, `"text"`, `{}`},
		{"minimum", `{"minimum":2}`, `2`, `1.999`},
		{"maximum", `{"maximum":2}`, `2`, `2.001`},
		{"exclusiveMinimum", `{"exclusiveMinimum":2}`, `2.001`, `2`},
		{"exclusiveMaximum", `{"exclusiveMaximum":2}`, `1.999`, `2`},
		{"multipleOf", `{"multipleOf":3}`, `9`, `10`},
		{"multipleOf fraction", `{"multipleOf":0.1}`, `0.3`, `0.35`},
		{"minLength", `{"minLength":2}`, `"ab"`, `"a"`},
		{"minLength counts code points", `{"minLength":2}`, `"éé"`, `"é"`},
		{"maxLength", `{"maxLength":2}`, `"ab"`, `"abc"`},
		{"maxLength counts code points", `{"maxLength":2}`, `"日本"`, `"日本語"`},
		{"pattern unanchored", `{"pattern":"b+"}`, `"abbc"`, `"ac"`},
		{"pattern anchored", `{"pattern":"^[a-z]+$"}`, `"abc"`, `"abc1"`},
		{"minItems", `{"minItems":1}`, `[0]`, `[]`},
		{"maxItems", `{"maxItems":1}`, `[0]`, `[0,1]`},
		{"uniqueItems", `{"uniqueItems":true}`, `[1,"1",[1],{"a":1},{"a":2}]`, `[{"a":1,"b":2},{"b":2,"a":1}]`},
		{"uniqueItems numbers by value", `{"uniqueItems":true}`, `[1,2]`, `[1,1.0]`},
		{"uniqueItems false", `{"uniqueItems":false}`, `[1,1]`, `[1,1]`},
		{"minProperties", `{"minProperties":1}`, `{"a":1}`, `{}`},
		{"maxProperties", `{"maxProperties":1}`, `{"a":1}`, `{"a":1,"b":2}`},
		{"properties", `{"properties":{"a":{"type":"string"}}}`, `{"a":"x","b":1}`, `{"a":1}`},
		{"additionalProperties false", `{"properties":{"a":{}},"additionalProperties":false}`, `{"a":1}`, `{"a":1,"b":2}`},
		{"additionalProperties true", `{"properties":{"a":{}},"additionalProperties":true}`, `{"b":2}`, ``},
		{"additionalProperties schema", `{"properties":{"a":{}},"additionalProperties":{"type":"integer"}}`, `{"a":"x","b":2}`, `{"b":"2"}`},
		{"items", `{"items":{"type":"integer"}}`, `[1,2,3]`, `[1,"2"]`},
		{"allOf", `{"allOf":[{"minimum":1},{"maximum":3}]}`, `2`, `4`},
		{"anyOf", `{"anyOf":[{"type":"string"},{"minimum":10}]}`, `11`, `9`},
		{"oneOf", `{"oneOf":[{"minimum":5},{"maximum":10}]}`, `11`, `7`},
		{"oneOf none", `{"oneOf":[{"type":"string"},{"type":"boolean"}]}`, `true`, `1`},
		{"not", `{"not":{"type":"string"}}`, `1`, `"x"`},
		{"true schema", `true`, `{"anything":[1]}`, ``},
		{"false schema", `false`, ``, `null`},
		{"false subschema", `{"properties":{"a":false}}`, `{"b":1}`, `{"a":1}`},
		{"annotations ignored", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","$comment":"c","title":"t","description":"d","default":1,"examples":[1],"format":"email","readOnly":true,"writeOnly":false,"deprecated":true,"type":"string"}`, `"not an email"`, `1`},
		{"nested", `{"type":"object","properties":{"img":{"type":"object","required":["w"],"properties":{"w":{"type":"integer","minimum":1}}}}}`, `{"img":{"w":5}}`, `{"img":{"w":0}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, tt.schema)
			if tt.valid != "" {
				if vs := validate(t, s, tt.valid); len(vs) != 0 {
					t.Errorf("%s against %s: %v, want valid", tt.valid, tt.schema, vs)
				}
			}
			if tt.invalid != "" && tt.invalid != tt.valid {
				if vs := validate(t, s, tt.invalid); len(vs) == 0 {
					t.Errorf("%s against %s: valid, want a violation", tt.invalid, tt.schema)
				}
			}
		})
	}
}

func TestViolationPathsAndMessages(t *testing.T) {
	s := compile(t, `{
		"type": "object",
		"required": ["name", "a/b", "t~"],
		"properties": {
			"name": {}, "a/b": {}, "t~": {},
			"size": {"type": "object", "required": ["w"], "properties": {"w": {"type": "integer", "maximum": 100}}},
			"tags": {"type": "array", "items": {"type": "string", "maxLength": 3}}
		},
		"additionalProperties": false
	}`)
	vs := validate(t, s, `{"size":{"w":101},"tags":["ok","toolong",7],"extra":true}`)
	type key struct {
		path    string
		missing bool
	}
	got := map[key]string{}
	for _, v := range vs {
		got[key{v.Path, v.Missing}] = v.Message
	}
	want := []struct {
		path    string
		missing bool
		msg     string
	}{
		{"/name", true, "required"},
		{"/a~1b", true, "required"},
		{"/t~0", true, "required"},
		{"/size/w", false, "maximum"},
		{"/tags/1", false, "longer than 3"},
		{"/tags/2", false, "expected string"},
		{"/extra", false, "not allowed"},
	}
	for _, w := range want {
		msg, ok := got[key{w.path, w.missing}]
		if !ok {
			t.Errorf("no violation at %s (missing=%v); got %v", w.path, w.missing, vs)
			continue
		}
		if !strings.Contains(msg, w.msg) {
			t.Errorf("violation at %s: %q, want it to mention %q", w.path, msg, w.msg)
		}
	}
	if len(vs) != len(want) {
		t.Errorf("%d violations, want %d: %v", len(vs), len(want), vs)
	}

	t.Run("nested required", func(t *testing.T) {
		vs := validate(t, s, `{"name":1,"a/b":1,"t~":1,"size":{}}`)
		if len(vs) != 1 || vs[0].Path != "/size/w" || !vs[0].Missing {
			t.Errorf("violations = %+v, want one missing /size/w", vs)
		}
	})
	t.Run("root type", func(t *testing.T) {
		vs := validate(t, s, `[1]`)
		if len(vs) != 1 || vs[0].Path != "" || vs[0].Missing {
			t.Fatalf("violations = %+v, want one at the root", vs)
		}
		if got := vs[0].String(); got != "at /: expected object, found array" {
			t.Errorf("String() = %q", got)
		}
	})
	t.Run("valid", func(t *testing.T) {
		if vs := validate(t, s, `{"name":1,"a/b":1,"t~":1,"size":{"w":100},"tags":["a","bc"]}`); len(vs) != 0 {
			t.Errorf("violations = %v, want none", vs)
		}
	})
}

// Missing is set for required properties only.
func TestMissingFlag(t *testing.T) {
	s := compile(t, `{"required":["ms"],"properties":{"ms":{"type":"integer"}}}`)
	vs := validate(t, s, `{}`)
	if len(vs) != 1 || !vs[0].Missing || vs[0].Path != "/ms" {
		t.Errorf("{} = %+v, want one Missing violation at /ms", vs)
	}
	vs = validate(t, s, `{"ms":"x"}`)
	if len(vs) != 1 || vs[0].Missing || vs[0].Path != "/ms" {
		t.Errorf(`{"ms":"x"} = %+v, want one type violation at /ms, not Missing`, vs)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		schema string
		want   string
	}{
		{`{"$ref":"#/defs/x"}`, `"$ref"`},
		{`{"if":{},"then":{}}`, `"if"`},
		{`{"properties":{"a":{"patternProperties":{}}}}`, `"patternProperties"`},
		{`{"items":{"prefixItems":[]}}`, `"prefixItems"`},
		{`{"allOf":[{"type":"string"},{"dependentRequired":{}}]}`, `"dependentRequired"`},
		{`{"type":"float"}`, `unknown type "float"`},
		{`{"type":1}`, "type"},
		{`{"type":["string",1]}`, "type"},
		{`{"required":"a"}`, "required"},
		{`{"required":[1]}`, "required"},
		{`{"minimum":"1"}`, "minimum"},
		{`{"multipleOf":0}`, "multipleOf"},
		{`{"multipleOf":-2}`, "multipleOf"},
		{`{"minLength":-1}`, "minLength"},
		{`{"maxItems":1.5}`, "maxItems"},
		{`{"pattern":"("}`, "pattern"},
		{`{"pattern":1}`, "pattern"},
		{`{"uniqueItems":"yes"}`, "uniqueItems"},
		{`{"allOf":[]}`, "allOf"},
		{`{"anyOf":{}}`, "anyOf"},
		{`{"enum":"a"}`, "enum"},
		{`{"properties":[]}`, "properties"},
		{`{"items":[{}]}`, "items"},
		{`{"not":1}`, "not"},
		{`[]`, "object or a boolean"},
		{`"string"`, "object or a boolean"},
		{`{"a":1`, "schema"},
		{`{} {}`, "trailing"},
		{``, "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			_, err := schema.Compile([]byte(tt.schema))
			if err == nil {
				t.Fatalf("Compile(%s) succeeded, want an error", tt.schema)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compile(%s) = %q, want it to mention %s", tt.schema, err, tt.want)
			}
		})
	}
}

func TestValidateRejectsBadJSON(t *testing.T) {
	s := compile(t, `{}`)
	for _, doc := range []string{``, `{`, `{"a":1} x`, `[1,]`, `nul`} {
		if _, err := s.Validate([]byte(doc)); err == nil {
			t.Errorf("Validate(%q) succeeded, want a decode error", doc)
		}
	}
}

func nested(open, close string, n int) string {
	return strings.Repeat(open, n) + strings.Repeat(close, n)
}

// Hostile nesting is bounded: deep schemas fail to compile and deep values
// are reported, without exhausting the stack.
func TestDepthLimits(t *testing.T) {
	t.Run("deep schema", func(t *testing.T) {
		doc := strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100)
		if _, err := schema.Compile([]byte(doc)); err == nil || !strings.Contains(err.Error(), "deeper") {
			t.Errorf("Compile of 100 nested items = %v, want a depth error", err)
		}
		doc = strings.Repeat(`{"not":`, 10_000) + `{}` + strings.Repeat(`}`, 10_000)
		if _, err := schema.Compile([]byte(doc)); err == nil {
			t.Error("Compile of 10,000 nested not succeeded")
		}
	})
	t.Run("deep instance", func(t *testing.T) {
		// A schema that recurses nearly as deep as it may.
		deepSchema := strings.Repeat(`{"items":`, 60) + `{"type":"string"}` + strings.Repeat(`}`, 60)
		s := compile(t, deepSchema)
		vs := validate(t, s, strings.Repeat("[", 60)+`"x"`+strings.Repeat("]", 60))
		if len(vs) != 0 {
			t.Errorf("a string 60 arrays down: %v, want valid", vs)
		}
		vs = validate(t, s, strings.Repeat("[", 60)+"1"+strings.Repeat("]", 60))
		if len(vs) != 1 || strings.Count(vs[0].Path, "/0") != 60 || !strings.Contains(vs[0].Message, "expected string") {
			t.Errorf("violations = %v, want one type violation 60 levels down", vs)
		}
	})
	t.Run("limit", func(t *testing.T) {
		s := compile(t, `{}`)
		if vs := validate(t, s, nested("[", "]", 64)); len(vs) != 0 {
			t.Errorf("64 nested arrays: %v, want valid", vs)
		}
		if vs := validate(t, s, `{"a":"[[[[`+strings.Repeat("{", 100)+`"}`); len(vs) != 0 {
			t.Errorf("brackets inside a string counted as nesting: %v", vs)
		}
		if vs := validate(t, s, `{"a":"\\\"[[[[`+strings.Repeat("[", 100)+`"}`); len(vs) != 0 {
			t.Errorf("escaped quotes end the string early: %v", vs)
		}
		vs := validate(t, s, nested("[", "]", 65))
		if len(vs) != 1 || vs[0].Path != "" || !strings.Contains(vs[0].Message, "deeper than 64") {
			t.Errorf("65 nested arrays: %v, want one depth violation at the root", vs)
		}
	})
	for _, sch := range []string{`{}`, `true`, `{"items":{"items":{"items":{}}}}`, `{"uniqueItems":true}`,
		`{"enum":[[[1]]]}`, `{"const":[[[1]]]}`, `{"not":{"items":{"type":"string"}}}`, `{"anyOf":[{"items":{}},{"type":"object"}]}`} {
		for _, n := range []int{10_000, 1_000_000} {
			t.Run(fmt.Sprintf("%d nested arrays %s", n, sch), func(t *testing.T) {
				s := compile(t, sch)
				for _, doc := range []string{nested("[", "]", n), nested(`{"a":`, "}", n), "[" + nested("[", "]", n) + "," + nested("[", "]", n) + "]"} {
					vs, err := s.Validate([]byte(doc))
					if err == nil && len(vs) == 0 {
						t.Errorf("%d levels of nesting validated clean, want a violation or an error", n)
					}
				}
			})
		}
	}
}

func TestViolationCap(t *testing.T) {
	s := compile(t, `{"items":{"type":"string"}}`)
	doc, _ := json.Marshal(make([]int, 500))
	vs := validate(t, s, string(doc))
	if len(vs) != 100 {
		t.Errorf("%d violations for 500 bad items, want the cap of 100", len(vs))
	}
	if vs[0].Path != "/0" || vs[99].Path != "/99" {
		t.Errorf("violations %s … %s, want /0 … /99 in document order", vs[0].Path, vs[99].Path)
	}
}

func ExampleSchema_Validate() {
	s, _ := schema.Compile([]byte(`{"type":"object","required":["ms"],"properties":{"ms":{"type":"integer","minimum":0}}}`))
	vs, _ := s.Validate([]byte(`{"unit":"s"}`))
	for _, v := range vs {
		fmt.Println(v.Path, v.Missing, v.Message)
	}
	vs, _ = s.Validate([]byte(`{"ms":-1}`))
	fmt.Println(vs[0])
	// Output:
	// /ms true required property is missing
	// at /ms: -1 is less than the minimum 0
}
