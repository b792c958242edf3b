package tier1_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

func TestTelemetryHash(t *testing.T) {
	// The canonical text, written out by hand: keys sorted, no whitespace,
	// "unit" only where set, "optional" only where true.
	canonical := `{"capability_id":"synapse.telemetry",` +
		`"description":"One metric sample per frame: device, sequence number, timestamp (unix nanoseconds), metric name, value and optional unit.",` +
		`"fields":[` +
		`{"name":"device_id","type":"str"},` +
		`{"name":"seq","type":"uint"},` +
		`{"name":"ts","type":"int","unit":"ns"},` +
		`{"name":"metric","type":"str"},` +
		`{"name":"value","type":"float"},` +
		`{"name":"unit","optional":true,"type":"str"}],` +
		`"name":"Telemetry","version":"1.0.0"}`
	d := tier1.Telemetry()
	if got := string(d.CanonicalJSON()); got != canonical {
		t.Errorf("CanonicalJSON() =\n%s\nwant\n%s", got, canonical)
	}
	sum := sha256.Sum256([]byte(canonical))
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := d.Hash(); got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}
	// Pinned so that an edit of the built-in routine, which would break
	// negotiation with every deployed agent, fails here.
	if got, pinned := d.Hash(), "sha256:9e0ac4a2a12e518187097ee4a8fc91d1b93786ea8d8e8c9c2c9337a9efcdb448"; got != pinned {
		t.Errorf("Hash() = %s, the published hash is %s", got, pinned)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("Telemetry().Validate() = %v", err)
	}
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		name string
		d    tier1.Descriptor
		want string
	}{
		{
			name: "escaping like RFC 8785",
			d: tier1.Descriptor{CapabilityID: "x", Version: "1", Name: "a<b>&c",
				Description: "q\"b\\n\nt\tc\x01d\x7fé\u2028😀",
				Fields:      []tier1.Field{{Name: "f", Type: tier1.TypeBin, Unit: "°C"}}},
			want: `{"capability_id":"x","description":"q\"b\\n\nt\tc\u0001d` + "\x7fé\u2028😀" +
				`","fields":[{"name":"f","type":"bin","unit":"°C"}],"name":"a<b>&c","version":"1"}`,
		},
		{
			name: "empty strings kept, nil fields an array",
			d:    tier1.Descriptor{CapabilityID: "x", Version: "1"},
			want: `{"capability_id":"x","description":"","fields":[],"name":"","version":"1"}`,
		},
		{
			name: "optional false and empty unit left out",
			d: tier1.Descriptor{CapabilityID: "x", Version: "1", Fields: []tier1.Field{
				{Name: "a", Type: tier1.TypeInt, Optional: false, Unit: ""},
				{Name: "b", Type: tier1.TypeBool, Optional: true}}},
			want: `{"capability_id":"x","description":"","fields":[{"name":"a","type":"int"},{"name":"b","optional":true,"type":"bool"}],"name":"","version":"1"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.d.CanonicalJSON()); got != tt.want {
				t.Errorf("CanonicalJSON() =\n%s\nwant\n%s", got, tt.want)
			}
			sum := sha256.Sum256([]byte(tt.want))
			if got, want := tt.d.Hash(), "sha256:"+hex.EncodeToString(sum[:]); got != want {
				t.Errorf("Hash() = %s, want %s", got, want)
			}
		})
	}
}

func TestDescriptorJSON(t *testing.T) {
	d := tier1.Telemetry()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"capability_id", "version", "name", "description", "fields"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON of a descriptor lacks %q: %s", k, b)
		}
	}
	if !strings.Contains(string(b), `{"name":"unit","type":"str","optional":true}`) {
		t.Errorf("field JSON = %s, want keys name, type, unit?, optional?", b)
	}
	var back tier1.Descriptor
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Hash() != d.Hash() {
		t.Errorf("hash changed over a JSON round trip")
	}
}

func TestValidate(t *testing.T) {
	field := func(name string, typ tier1.FieldType) tier1.Field { return tier1.Field{Name: name, Type: typ} }
	many := make([]tier1.Field, tier1.MaxFields+1)
	for i := range many {
		many[i] = field(strings.Repeat("f", i+1), tier1.TypeInt)
	}
	good := tier1.Descriptor{CapabilityID: "acme.vib-2_x", Version: "2.0.0+b1", Fields: []tier1.Field{field("a", tier1.TypeBin)}}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	if err := (&tier1.Descriptor{CapabilityID: "x", Version: "1", Fields: many[:tier1.MaxFields]}).Validate(); err != nil {
		t.Errorf("Validate(%d fields) = %v", tier1.MaxFields, err)
	}
	tests := []struct {
		name   string
		mutate func(d *tier1.Descriptor)
	}{
		{"empty id", func(d *tier1.Descriptor) { d.CapabilityID = "" }},
		{"id with a slash", func(d *tier1.Descriptor) { d.CapabilityID = "a/b" }},
		{"id too long", func(d *tier1.Descriptor) { d.CapabilityID = strings.Repeat("a", 129) }},
		{"empty version", func(d *tier1.Descriptor) { d.Version = "" }},
		{"version with a space", func(d *tier1.Descriptor) { d.Version = "1 0" }},
		{"no fields", func(d *tier1.Descriptor) { d.Fields = nil }},
		{"too many fields", func(d *tier1.Descriptor) { d.Fields = many }},
		{"empty field name", func(d *tier1.Descriptor) { d.Fields = []tier1.Field{field("", tier1.TypeInt)} }},
		{"control character in name", func(d *tier1.Descriptor) { d.Fields = []tier1.Field{field("a\nb", tier1.TypeInt)} }},
		{"duplicate field name", func(d *tier1.Descriptor) {
			d.Fields = []tier1.Field{field("a", tier1.TypeInt), field("b", tier1.TypeInt), field("a", tier1.TypeStr)}
		}},
		{"unknown type", func(d *tier1.Descriptor) { d.Fields = []tier1.Field{field("a", "double")} }},
		{"invalid UTF-8 description", func(d *tier1.Descriptor) { d.Description = "\xff" }},
		{"invalid UTF-8 unit", func(d *tier1.Descriptor) { d.Fields = []tier1.Field{{Name: "a", Type: tier1.TypeInt, Unit: "\xff"}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := good
			d.Fields = append([]tier1.Field(nil), good.Fields...)
			tt.mutate(&d)
			if err := d.Validate(); !errors.Is(err, tier1.ErrInvalidDescriptor) {
				t.Errorf("Validate() = %v, want ErrInvalidDescriptor", err)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	other := tier1.Descriptor{CapabilityID: "acme.vibration", Version: "1", Fields: []tier1.Field{{Name: "g", Type: tier1.TypeFloat}}}
	reg, err := tier1.NewRegistry(tier1.Telemetry(), other)
	if err != nil {
		t.Fatal(err)
	}
	list := reg.List()
	if len(list) != 2 || list[0].CapabilityID != "acme.vibration" || list[1].CapabilityID != "synapse.telemetry" {
		t.Fatalf("List() = %+v, want acme.vibration then synapse.telemetry", list)
	}
	list[1].Fields[0].Name = "changed"
	d, ok := reg.Get("synapse.telemetry")
	if !ok || d.Fields[0].Name != "device_id" {
		t.Errorf("Get after changing a List() copy = %+v, %v", d, ok)
	}
	if got, want := d.FieldIndex("ts"), 2; got != want {
		t.Errorf("FieldIndex(ts) = %d, want %d", got, want)
	}
	if got := d.FieldIndex("nope"); got != -1 {
		t.Errorf("FieldIndex(nope) = %d, want -1", got)
	}
	if _, ok := reg.Get("nope"); ok {
		t.Error("Get(nope) found something")
	}
	if _, err := tier1.NewRegistry(other, other); !errors.Is(err, tier1.ErrDuplicateRoutine) {
		t.Errorf("NewRegistry(duplicate) = %v, want ErrDuplicateRoutine", err)
	}
	if _, err := tier1.NewRegistry(tier1.Descriptor{CapabilityID: "x"}); !errors.Is(err, tier1.ErrInvalidDescriptor) {
		t.Errorf("NewRegistry(invalid) = %v, want ErrInvalidDescriptor", err)
	}
	var nilReg *tier1.Registry
	if _, ok := nilReg.Get("synapse.telemetry"); ok {
		t.Error("nil registry found a routine")
	}
}
