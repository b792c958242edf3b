// Package schema validates JSON values against the subset of JSON Schema
// (draft 2020-12 vocabulary) that task input schemas use. It exists instead
// of a full JSON Schema library to keep the edge binary small (a full
// implementation added about 1 MiB to the arm64 build).
//
// # Supported keywords
//
// Applicators: properties, additionalProperties (boolean or schema), items
// (one schema for every element), allOf, anyOf, oneOf, not.
// Validation: type (a name or a list; "integer" accepts 3.0), enum, const,
// required, minimum, maximum, exclusiveMinimum, exclusiveMaximum
// (numbers), multipleOf, minLength, maxLength (in code points), pattern
// (RE2 syntax, unanchored), minItems, maxItems, uniqueItems, minProperties,
// maxProperties.
// Annotations, accepted and ignored: $schema, $id, $comment, title,
// description, default, examples, format, readOnly, writeOnly, deprecated.
//
// Any other keyword ($ref, if/then/else, patternProperties, ...) makes
// Compile fail with an error naming it: a schema is never half-enforced.
//
// # Missing fields
//
// Validate returns the violations in document order. Violations of
// "required" are flagged Missing so that a task engine can ask for the
// missing fields (info_needed) rather than refuse the payload.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// Schema is a compiled schema.
type Schema struct {
	types      []string
	props      map[string]*Schema
	propOrder  []string
	addl       *Schema
	addlFalse  bool
	items      *Schema
	allOf      []*Schema
	anyOf      []*Schema
	oneOf      []*Schema
	not        *Schema
	enum       []any
	hasConst   bool
	constVal   any
	required   []string
	min, max   *float64
	exMin      *float64
	exMax      *float64
	multipleOf *float64
	minLen     *int
	maxLen     *int
	pattern    *regexp.Regexp
	minItems   *int
	maxItems   *int
	unique     bool
	minProps   *int
	maxProps   *int
	alwaysFail bool // the schema `false`
}

// Violation is one way a value does not match.
type Violation struct {
	// Path is the JSON pointer of the value ("" for the root).
	Path string
	// Missing is set for a required property that is absent; Path then
	// names the property itself.
	Missing bool
	Message string
}

func (v Violation) String() string {
	p := v.Path
	if p == "" {
		p = "/"
	}
	return "at " + p + ": " + v.Message
}

// maxDepth bounds schema nesting at compile time and value nesting at
// validation time.
const maxDepth = 64

var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "format": true, "readOnly": true, "writeOnly": true,
	"deprecated": true,
}

var knownTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true,
	"number": true, "integer": true, "string": true}

// Compile parses a schema document.
func Compile(doc []byte) (*Schema, error) {
	v, err := decode(doc)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return compile(v, "", 0)
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func compile(v any, at string, depth int) (*Schema, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("schema %s: nested deeper than %d", at, maxDepth)
	}
	switch t := v.(type) {
	case bool:
		return &Schema{alwaysFail: !t}, nil
	case map[string]any:
		s := &Schema{}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := s.keyword(k, t[k], at+"/"+k, depth); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("schema %s: must be an object or a boolean", orRoot(at))
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func (s *Schema) keyword(k string, v any, at string, depth int) error {
	bad := func(want string) error { return fmt.Errorf("schema %s: must be %s", at, want) }
	var err error
	switch k {
	case "type":
		switch t := v.(type) {
		case string:
			s.types = []string{t}
		case []any:
			for _, e := range t {
				str, ok := e.(string)
				if !ok {
					return bad("a type name or a list of them")
				}
				s.types = append(s.types, str)
			}
		default:
			return bad("a type name or a list of them")
		}
		for _, n := range s.types {
			if !knownTypes[n] {
				return fmt.Errorf("schema %s: unknown type %q", at, n)
			}
		}
	case "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return bad("an object")
		}
		s.props = map[string]*Schema{}
		for name, sub := range m {
			if s.props[name], err = compile(sub, at+"/"+name, depth+1); err != nil {
				return err
			}
			s.propOrder = append(s.propOrder, name)
		}
		sort.Strings(s.propOrder)
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			s.addlFalse = !b
			return nil
		}
		s.addl, err = compile(v, at, depth+1)
	case "items":
		s.items, err = compile(v, at, depth+1)
	case "allOf", "anyOf", "oneOf":
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return bad("a non-empty list of schemas")
		}
		var out []*Schema
		for i, sub := range list {
			c, err := compile(sub, fmt.Sprintf("%s/%d", at, i), depth+1)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		switch k {
		case "allOf":
			s.allOf = out
		case "anyOf":
			s.anyOf = out
		default:
			s.oneOf = out
		}
	case "not":
		s.not, err = compile(v, at, depth+1)
	case "enum":
		list, ok := v.([]any)
		if !ok {
			return bad("a list")
		}
		s.enum = list
	case "const":
		s.hasConst, s.constVal = true, v
	case "required":
		list, ok := v.([]any)
		if !ok {
			return bad("a list of property names")
		}
		for _, e := range list {
			str, ok := e.(string)
			if !ok {
				return bad("a list of property names")
			}
			s.required = append(s.required, str)
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		f, ok := number(v)
		if !ok {
			return bad("a number")
		}
		if k == "multipleOf" && f <= 0 {
			return bad("greater than 0")
		}
		*map[string]**float64{"minimum": &s.min, "maximum": &s.max, "exclusiveMinimum": &s.exMin,
			"exclusiveMaximum": &s.exMax, "multipleOf": &s.multipleOf}[k] = &f
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		f, ok := number(v)
		if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return bad("a non-negative whole number")
		}
		n := int(f)
		*map[string]**int{"minLength": &s.minLen, "maxLength": &s.maxLen, "minItems": &s.minItems,
			"maxItems": &s.maxItems, "minProperties": &s.minProps, "maxProperties": &s.maxProps}[k] = &n
	case "pattern":
		str, ok := v.(string)
		if !ok {
			return bad("a regular expression")
		}
		if s.pattern, err = regexp.Compile(str); err != nil {
			return fmt.Errorf("schema %s: %v", at, err)
		}
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return bad("a boolean")
		}
		s.unique = b
	default:
		if !annotations[k] {
			return fmt.Errorf("schema %s: keyword %q is not supported by this agent", at, k)
		}
	}
	return err
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// Validate checks a JSON document and returns every violation (at most 100).
// A document nested deeper than the depth limit is one violation at the
// root, whatever the schema, and is not decoded.
func (s *Schema) Validate(doc []byte) ([]Violation, error) {
	if nestedDeeper(doc, maxDepth) {
		return []Violation{{Message: fmt.Sprintf("value nested deeper than %d", maxDepth)}}, nil
	}
	v, err := decode(doc)
	if err != nil {
		return nil, err
	}
	var out []Violation
	s.check(v, "", 0, &out)
	return out, nil
}

const maxViolations = 100

// nestedDeeper reports whether the arrays and objects of a JSON text nest
// deeper than limit. It scans the bytes without decoding (a malformed text
// is left to the decoder to refuse).
func nestedDeeper(doc []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range doc {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > limit {
				return true
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return false
}

func (s *Schema) check(v any, at string, depth int, out *[]Violation) {
	add := func(format string, args ...any) {
		if len(*out) < maxViolations {
			*out = append(*out, Violation{Path: at, Message: fmt.Sprintf(format, args...)})
		}
	}
	if depth > maxDepth {
		add("value nested deeper than %d", maxDepth)
		return
	}
	if s.alwaysFail {
		add("no value is allowed here")
		return
	}
	if len(s.types) > 0 && !typeMatches(s.types, v) {
		add("expected %s, found %s", strings.Join(s.types, " or "), typeName(v))
		return
	}
	if len(s.enum) > 0 {
		found := false
		for _, e := range s.enum {
			if equal(e, v) {
				found = true
				break
			}
		}
		if !found {
			add("value is not one of the allowed values")
		}
	}
	if s.hasConst && !equal(s.constVal, v) {
		add("value must equal the constant")
	}
	switch t := v.(type) {
	case json.Number:
		s.checkNumber(t, add)
	case string:
		n := utf8.RuneCountInString(t)
		if s.minLen != nil && n < *s.minLen {
			add("string shorter than %d", *s.minLen)
		}
		if s.maxLen != nil && n > *s.maxLen {
			add("string longer than %d", *s.maxLen)
		}
		if s.pattern != nil && !s.pattern.MatchString(t) {
			add("string does not match %q", s.pattern.String())
		}
	case []any:
		if s.minItems != nil && len(t) < *s.minItems {
			add("fewer than %d items", *s.minItems)
		}
		if s.maxItems != nil && len(t) > *s.maxItems {
			add("more than %d items", *s.maxItems)
		}
		if s.unique && len(t) <= 1000 {
			for i := range t {
				for j := i + 1; j < len(t); j++ {
					if equal(t[i], t[j]) {
						add("items %d and %d are equal", i, j)
					}
				}
			}
		}
		if s.items != nil {
			for i, e := range t {
				s.items.check(e, fmt.Sprintf("%s/%d", at, i), depth+1, out)
			}
		}
	case map[string]any:
		s.checkObject(t, at, depth, out, add)
	}
	for _, sub := range s.allOf {
		sub.check(v, at, depth+1, out)
	}
	if len(s.anyOf) > 0 && countMatches(s.anyOf, v, depth) == 0 {
		add("value matches none of anyOf")
	}
	if len(s.oneOf) > 0 {
		if n := countMatches(s.oneOf, v, depth); n != 1 {
			add("value matches %d of oneOf, want exactly 1", n)
		}
	}
	if s.not != nil && countMatches([]*Schema{s.not}, v, depth) == 1 {
		add("value matches the schema under not")
	}
}

func (s *Schema) checkNumber(n json.Number, add func(string, ...any)) {
	f, err := n.Float64()
	if err != nil {
		add("number out of range")
		return
	}
	if s.min != nil && f < *s.min {
		add("%v is less than the minimum %v", f, *s.min)
	}
	if s.max != nil && f > *s.max {
		add("%v is greater than the maximum %v", f, *s.max)
	}
	if s.exMin != nil && f <= *s.exMin {
		add("%v is not greater than %v", f, *s.exMin)
	}
	if s.exMax != nil && f >= *s.exMax {
		add("%v is not less than %v", f, *s.exMax)
	}
	if s.multipleOf != nil {
		q := f / *s.multipleOf
		if math.Abs(q-math.Round(q)) > 1e-9 {
			add("%v is not a multiple of %v", f, *s.multipleOf)
		}
	}
}

func (s *Schema) checkObject(m map[string]any, at string, depth int, out *[]Violation, add func(string, ...any)) {
	for _, r := range s.required {
		if _, ok := m[r]; !ok && len(*out) < maxViolations {
			*out = append(*out, Violation{Path: at + "/" + escape(r), Missing: true, Message: "required property is missing"})
		}
	}
	if s.minProps != nil && len(m) < *s.minProps {
		add("fewer than %d properties", *s.minProps)
	}
	if s.maxProps != nil && len(m) > *s.maxProps {
		add("more than %d properties", *s.maxProps)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := at + "/" + escape(k)
		if sub, ok := s.props[k]; ok {
			sub.check(m[k], p, depth+1, out)
			continue
		}
		switch {
		case s.addlFalse:
			if len(*out) < maxViolations {
				*out = append(*out, Violation{Path: p, Message: "property is not allowed"})
			}
		case s.addl != nil:
			s.addl.check(m[k], p, depth+1, out)
		}
	}
}

func countMatches(list []*Schema, v any, depth int) int {
	n := 0
	for _, sub := range list {
		var tmp []Violation
		sub.check(v, "", depth+1, &tmp)
		if len(tmp) == 0 {
			n++
		}
	}
	return n
}

func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func typeName(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if isInteger(t) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func isInteger(n json.Number) bool {
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
}

func typeMatches(types []string, v any) bool {
	got := typeName(v)
	for _, t := range types {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

// equal compares decoded JSON values; numbers compare by value.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, e1 := x.Float64()
		fy, e2 := y.Float64()
		return e1 == nil && e2 == nil && fx == fy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return a == b
}
