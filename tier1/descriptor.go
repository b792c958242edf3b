package tier1

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// FieldType is the type of a routine field.
type FieldType string

// The field types.
const (
	TypeStr   FieldType = "str"   // UTF-8 text
	TypeInt   FieldType = "int"   // signed 64-bit integer
	TypeUint  FieldType = "uint"  // unsigned 64-bit integer
	TypeFloat FieldType = "float" // IEEE 754 double
	TypeBool  FieldType = "bool"
	TypeBin   FieldType = "bin" // opaque bytes
)

// kind returns the value kind of the type, or KindNull if it is unknown.
func (t FieldType) kind() Kind {
	switch t {
	case TypeStr:
		return KindStr
	case TypeInt:
		return KindInt
	case TypeUint:
		return KindUint
	case TypeFloat:
		return KindFloat
	case TypeBool:
		return KindBool
	case TypeBin:
		return KindBin
	}
	return KindNull
}

// MaxFields is the most fields a routine may have.
const MaxFields = 64

// Field is one positional field of a routine.
type Field struct {
	Name     string    `json:"name"`
	Type     FieldType `json:"type"`
	Unit     string    `json:"unit,omitempty"`
	Optional bool      `json:"optional,omitempty"`
}

// Descriptor describes a standardized routine (a CapabilityDescriptor):
// what its frames hold, field by field, in wire order.
type Descriptor struct {
	CapabilityID string  `json:"capability_id"`
	Version      string  `json:"version"`
	Name         string  `json:"name"`
	Description  string  `json:"description"`
	Fields       []Field `json:"fields"`
}

// Telemetry returns the built-in synapse.telemetry 1.0.0 routine: one
// metric sample per frame.
func Telemetry() Descriptor {
	return Descriptor{
		CapabilityID: "synapse.telemetry",
		Version:      "1.0.0",
		Name:         "Telemetry",
		Description:  "One metric sample per frame: device, sequence number, timestamp (unix nanoseconds), metric name, value and optional unit.",
		Fields: []Field{
			{Name: "device_id", Type: TypeStr},
			{Name: "seq", Type: TypeUint},
			{Name: "ts", Type: TypeInt, Unit: "ns"},
			{Name: "metric", Type: TypeStr},
			{Name: "value", Type: TypeFloat},
			{Name: "unit", Type: TypeStr, Optional: true},
		},
	}
}

// Validate checks the descriptor: a capability_id of letters, digits, '.',
// '_' and '-' (it appears in URL paths), a version of the same characters
// plus '+', 1 to MaxFields fields with unique non-empty names and known
// types, and valid UTF-8 everywhere.
func (d *Descriptor) Validate() error {
	if err := checkID(d.CapabilityID, 128, ""); err != nil {
		return fmt.Errorf("%w: capability_id: %v", ErrInvalidDescriptor, err)
	}
	if err := checkID(d.Version, 64, "+"); err != nil {
		return fmt.Errorf("%w: %s: version: %v", ErrInvalidDescriptor, d.CapabilityID, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{ErrInvalidDescriptor, d.CapabilityID}, args...)...)
	}
	if !utf8.ValidString(d.Name) || !utf8.ValidString(d.Description) {
		return bad("name and description must be valid UTF-8")
	}
	if len(d.Fields) == 0 || len(d.Fields) > MaxFields {
		return bad("%d fields, want 1 to %d", len(d.Fields), MaxFields)
	}
	for i, f := range d.Fields {
		switch {
		case f.Name == "" || len(f.Name) > 128:
			return bad("fields[%d].name: want 1 to 128 bytes", i)
		case !utf8.ValidString(f.Name) || strings.ContainsFunc(f.Name, isControl):
			return bad("fields[%d].name: want UTF-8 text without control characters", i)
		case !utf8.ValidString(f.Unit):
			return bad("fields[%d].unit: not valid UTF-8", i)
		case f.Type.kind() == KindNull:
			return bad("fields[%d].type: unknown type %q", i, f.Type)
		}
		if slices.ContainsFunc(d.Fields[:i], func(g Field) bool { return g.Name == f.Name }) {
			return bad("fields[%d].name: duplicate name %q", i, f.Name)
		}
	}
	return nil
}

func checkID(s string, maxLen int, extra string) error {
	if s == "" || len(s) > maxLen {
		return fmt.Errorf("want 1 to %d bytes, got %d", maxLen, len(s))
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-' || strings.IndexByte(extra, c) >= 0
		if !ok {
			return fmt.Errorf("character %q not allowed in %q", c, s)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// FieldIndex returns the position of the named field, or -1.
func (d *Descriptor) FieldIndex(name string) int {
	return slices.IndexFunc(d.Fields, func(f Field) bool { return f.Name == name })
}

// clone returns a deep copy of d.
func (d *Descriptor) clone() Descriptor {
	c := *d
	c.Fields = slices.Clone(d.Fields)
	return c
}

// required returns the number of values a frame of d must hold at least:
// the position of the last required field plus one.
func (d *Descriptor) required() int {
	for i := len(d.Fields) - 1; i >= 0; i-- {
		if !d.Fields[i].Optional {
			return i + 1
		}
	}
	return 0
}

// Registry holds the routines an agent knows, by capability_id. It is
// immutable once built and safe for concurrent use.
type Registry struct {
	byID map[string]*routine
	list []*Descriptor // sorted by capability_id
}

// routine is a routine of a registry, with its descriptor laid out for
// the decoder once (ok false: the layout failed, and the decoder says so).
type routine struct {
	d    *Descriptor
	plan plan
	ok   bool
}

// NewRegistry validates the descriptors and indexes them. A registry holds
// one version of each capability_id.
func NewRegistry(ds ...Descriptor) (*Registry, error) {
	r := &Registry{byID: make(map[string]*routine, len(ds))}
	for i := range ds {
		if err := ds[i].Validate(); err != nil {
			return nil, fmt.Errorf("new registry: %w", err)
		}
		id := ds[i].CapabilityID
		if _, dup := r.byID[id]; dup {
			return nil, fmt.Errorf("new registry: %w: %s", ErrDuplicateRoutine, id)
		}
		d := ds[i].clone()
		rt := &routine{d: &d}
		rt.ok = rt.plan.init(&d) == nil
		r.byID[id] = rt
		r.list = append(r.list, &d)
	}
	slices.SortFunc(r.list, func(a, b *Descriptor) int { return strings.Compare(a.CapabilityID, b.CapabilityID) })
	return r, nil
}

// Get returns the routine with the given capability_id. The descriptor is
// shared: callers must not modify it. A nil registry holds nothing.
func (r *Registry) Get(id string) (*Descriptor, bool) {
	if r == nil {
		return nil, false
	}
	rt, ok := r.byID[id]
	if !ok {
		return nil, false
	}
	return rt.d, true
}

// lookup is Get for an id held in a byte slice, without allocating.
func (r *Registry) lookup(id []byte) (*routine, bool) {
	if r == nil {
		return nil, false
	}
	rt, ok := r.byID[string(id)]
	return rt, ok
}

// List returns copies of all routines, sorted by capability_id.
func (r *Registry) List() []Descriptor {
	out := make([]Descriptor, len(r.list))
	for i, d := range r.list {
		out[i] = d.clone()
	}
	return out
}
