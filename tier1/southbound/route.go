// Package southbound maps messages of devices that publish on an MQTT
// broker onto tier-1 frames: a Route of the configuration names a topic
// filter, a routine and, for each field of the routine, where its value
// comes from; Compile checks it against the routine, and Mapping.Batch
// turns one message (topic and JSON or msgpack payload) into a one-frame
// tier-1 batch whose batch_id is derived from the message.
//
// The expression language is deliberately this small, and nothing more:
//
//   - "{N}" is the N-th '+' wildcard level of the topic (from 1);
//   - "$.name" is the top-level field name of the payload, a JSON object
//     or a msgpack map;
//   - "$" is the whole payload, a JSON or msgpack scalar;
//   - anything else is a literal: a JSON string, number or boolean,
//     converted to the field's type when the route is compiled.
//
// No nested paths, no arrays, no arithmetic, no string templates.
package southbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/synapse-edge/synapse/tier1"
)

// Route is one entry of the mqtt section's "southbound" list, written flat:
//
//	{"topic": "plant/+/temp", "routine": "synapse.telemetry",
//	 "device_id": "{1}", "seq": "$.seq", "ts": "$.t", "metric": "temp", "value": "$.v"}
//
// Every key besides topic, routine and version names a field of the
// routine; its value is an expression (see the package documentation).
type Route struct {
	// Topic is the MQTT topic filter subscribed to at QoS 1.
	Topic string
	// Routine is the capability_id of the frames; Version, when set, must
	// be the registered one.
	Routine string
	Version string
	// Fields maps field names to expressions, as raw JSON values.
	Fields map[string]json.RawMessage
}

// UnmarshalJSON reads the flat form.
func (r *Route) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*r = Route{Fields: map[string]json.RawMessage{}}
	for k, v := range m {
		var dst *string
		switch k {
		case "topic":
			dst = &r.Topic
		case "routine":
			dst = &r.Routine
		case "version":
			dst = &r.Version
		default:
			r.Fields[k] = v
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%s: want a string", k)
		}
	}
	return nil
}

// MarshalJSON writes the flat form.
func (r Route) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(r.Fields)+3)
	for k, v := range r.Fields {
		m[k] = v
	}
	m["topic"], m["routine"] = r.Topic, r.Routine
	if r.Version != "" {
		m["version"] = r.Version
	}
	return json.Marshal(m)
}

// source is where a field's value comes from.
type source uint8

const (
	fromLiteral source = iota
	fromSegment        // a '+' level of the topic
	fromKey            // a top-level field of the payload
	fromWhole          // the whole payload
)

type fieldMap struct {
	src  source
	n    int    // fromSegment: the topic level's index (from 0)
	key  string // fromKey
	lit  tier1.Value
	name string
	typ  tier1.FieldType
	opt  bool
}

// Mapping is a compiled Route; safe for concurrent use.
type Mapping struct {
	route   Route
	desc    *tier1.Descriptor
	fields  []fieldMap
	keys    []string // payload keys read, sorted
	payload bool     // some field reads the payload
}

// Compile checks r against the routines of reg: a valid topic filter,
// a known routine, every required field mapped, no unknown field, every
// expression valid for its field.
func Compile(r Route, reg *tier1.Registry) (*Mapping, error) {
	levels, err := checkFilter(r.Topic)
	if err != nil {
		return nil, fmt.Errorf("topic: %w", err)
	}
	d, ok := reg.Get(r.Routine)
	if !ok {
		return nil, fmt.Errorf("routine: no routine %q", r.Routine)
	}
	if r.Version != "" && r.Version != d.Version {
		return nil, fmt.Errorf("version: routine %s is version %s, not %s", d.CapabilityID, d.Version, r.Version)
	}
	names := make([]string, 0, len(r.Fields))
	for k := range r.Fields {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if d.FieldIndex(k) < 0 {
			return nil, fmt.Errorf("%s: routine %s has no such field", k, d.CapabilityID)
		}
	}
	m := &Mapping{route: r, desc: d}
	for _, f := range d.Fields {
		raw, ok := r.Fields[f.Name]
		if !ok {
			if !f.Optional {
				return nil, fmt.Errorf("%s: field of routine %s not mapped (a literal like 0 will do)", f.Name, d.CapabilityID)
			}
			m.fields = append(m.fields, fieldMap{src: fromLiteral, name: f.Name, typ: f.Type, opt: true})
			continue
		}
		fm, err := compileExpr(raw, levels, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if fm.src == fromKey {
			if slices.Contains(m.keys, fm.key) {
				return nil, fmt.Errorf("%s: $.%s is read by another field already", f.Name, fm.key)
			}
			m.keys = append(m.keys, fm.key)
		}
		m.payload = m.payload || fm.src == fromKey || fm.src == fromWhole
		m.fields = append(m.fields, fm)
	}
	slices.Sort(m.keys)
	return m, nil
}

// Route is the route m was compiled from.
func (m *Mapping) Route() Route { return m.route }

// Routine is the capability_id of the frames.
func (m *Mapping) Routine() string { return m.desc.CapabilityID }

// checkFilter checks an MQTT topic filter (MQTT 3.1.1 §4.7) and returns
// the level index of each '+'.
func checkFilter(f string) ([]int, error) {
	if f == "" || len(f) > 1024 {
		return nil, errors.New("want a topic filter of 1 to 1024 bytes")
	}
	var plus []int
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "+":
			plus = append(plus, i)
		case l == "#" && i == len(levels)-1:
		case strings.ContainsAny(l, "+#\x00"):
			return nil, fmt.Errorf("%q: a wildcard must be a whole level ('#' the last)", f)
		}
	}
	return plus, nil
}

func compileExpr(raw json.RawMessage, plus []int, f tier1.Field) (fieldMap, error) {
	fm := fieldMap{name: f.Name, typ: f.Type, opt: f.Optional}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return fm, err
		}
		switch {
		case s == "$":
			fm.src = fromWhole
			return fm, nil
		case strings.HasPrefix(s, "$."):
			if len(s) == 2 {
				return fm, errors.New(`"$." names no field`)
			}
			fm.src, fm.key = fromKey, s[2:]
			return fm, nil
		case len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}':
			n, err := strconv.Atoi(s[1 : len(s)-1])
			if err != nil || n < 1 || n > len(plus) {
				return fm, fmt.Errorf("%s: the topic filter has %d '+' levels", s, len(plus))
			}
			fm.src, fm.n = fromSegment, plus[n-1]
			return fm, nil
		}
		v, err := fromString(s, f.Type, true)
		if err != nil {
			return fm, fmt.Errorf("literal %q: %w", s, err)
		}
		fm.lit = v
		return fm, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fm, err
	}
	lit, err := fromJSON(v, f.Type)
	if err != nil || lit.IsNull() {
		return fm, fmt.Errorf("literal %s: want a %s", raw, f.Type)
	}
	fm.lit = lit
	return fm, nil
}

// fromString converts text (a topic level or a string literal) to t.
// A payload's strings (literal false) are taken only by str and bin
// fields.
func fromString(s string, t tier1.FieldType, literal bool) (tier1.Value, error) {
	switch t {
	case tier1.TypeStr:
		return tier1.Str(s), nil
	case tier1.TypeBin:
		return tier1.Bin([]byte(s)), nil
	}
	if !literal {
		return tier1.Value{}, fmt.Errorf("want a %s, got a string", t)
	}
	switch t {
	case tier1.TypeInt:
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return tier1.Int(i), nil
		}
	case tier1.TypeUint:
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return tier1.Uint(u), nil
		}
	case tier1.TypeFloat:
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return tier1.Float(f), nil
		}
	case tier1.TypeBool:
		if b, err := strconv.ParseBool(s); err == nil {
			return tier1.Bool(b), nil
		}
	}
	return tier1.Value{}, fmt.Errorf("%q is not a %s", s, t)
}

// fromJSON converts a decoded JSON value (numbers as json.Number) to t;
// null stays null.
func fromJSON(v any, t tier1.FieldType) (tier1.Value, error) {
	switch x := v.(type) {
	case nil:
		return tier1.Value{}, nil
	case string:
		return fromString(x, t, false)
	case bool:
		if t == tier1.TypeBool {
			return tier1.Bool(x), nil
		}
	case json.Number:
		return fromNumber(string(x), t)
	}
	return tier1.Value{}, fmt.Errorf("want a %s", t)
}

// fromNumber converts a JSON number to an int, uint or float field;
// integer fields take integral values only ("2e3" is 2000, "2.5" is
// refused).
func fromNumber(s string, t tier1.FieldType) (tier1.Value, error) {
	switch t {
	case tier1.TypeInt:
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return tier1.Int(i), nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return tier1.Int(int64(f)), nil
		}
	case tier1.TypeUint:
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return tier1.Uint(u), nil
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && f >= 0 && f < 1<<64 {
			return tier1.Uint(uint64(f)), nil
		}
	case tier1.TypeFloat:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return tier1.Float(f), nil
		}
	}
	return tier1.Value{}, fmt.Errorf("%s is not a %s", s, t)
}
