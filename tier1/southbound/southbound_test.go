package southbound_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/southbound"
)

const exampleRoute = `{"topic": "plant/+/temp", "routine": "synapse.telemetry",
	"device_id": "{1}", "seq": "$.seq", "ts": "$.t", "metric": "temp", "value": "$.v"}`

func registry(t testing.TB) *tier1.Registry {
	t.Helper()
	reg, err := tier1.NewRegistry(tier1.Telemetry())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func compile(t testing.TB, js string) *southbound.Mapping {
	t.Helper()
	var r southbound.Route
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	m, err := southbound.Compile(r, registry(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// frame decodes the batch b through the ingest decoder.
func frame(t *testing.T, b []byte) (tier1.Frame, string) {
	t.Helper()
	batch, err := tier1.DecodeBatch(b, registry(t), tier1.Limits{})
	if err != nil {
		t.Fatalf("the batch does not decode: %v", err)
	}
	if len(batch.Frames) != 1 {
		t.Fatalf("%d frames, want 1", len(batch.Frames))
	}
	return batch.Frames[0], batch.BatchID
}

func TestBatchJSONAndMsgpack(t *testing.T) {
	m := compile(t, exampleRoute)
	want := tier1.Frame{tier1.Str("line7"), tier1.Uint(42), tier1.Int(1700000000000000000), tier1.Str("temp"), tier1.Float(21.5)}
	js := []byte(`{"v": 21.5, "t": 1700000000000000000, "seq": 42, "other": [1, {"x": 2}]}`)
	mp, err := msgpack.Marshal(map[string]any{"v": 21.5, "t": int64(1700000000000000000), "seq": uint8(42), "other": []any{1, "x"}})
	if err != nil {
		t.Fatal(err)
	}
	// Dynamic-language encodings: 21.5 as float32, seq as a float.
	mp32, _ := msgpack.Marshal(map[string]any{"v": float32(21.5), "t": 1.7e18, "seq": 42.0})
	for name, p := range map[string][]byte{"json": js, "msgpack": mp, "msgpack-float32": mp32} {
		b, err := m.Batch(nil, "plant/line7/temp", p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, id := frame(t, b)
		if !f.Equal(want) {
			t.Errorf("%s: frame %v, want %v", name, f, want)
		}
		if id != southbound.BatchID("plant/line7/temp", p) {
			t.Errorf("%s: batch_id %q", name, id)
		}
	}
	// The batch_id tells readings apart by content only.
	if southbound.BatchID("a/b", js) != southbound.BatchID("a/b", js) ||
		southbound.BatchID("a/b", js) == southbound.BatchID("a/c", js) ||
		southbound.BatchID("a", []byte("b")) == southbound.BatchID("a/", nil) {
		t.Error("batch ids are not a function of (topic, payload)")
	}
}

func TestBatchWholePayloadAndLiterals(t *testing.T) {
	m := compile(t, `{"topic": "s/+/+", "routine": "synapse.telemetry", "device_id": "{2}",
		"seq": "{1}", "ts": 5, "metric": "m", "value": "$", "unit": "°C"}`)
	b, err := m.Batch(nil, "s/7/dev", []byte("20"))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := frame(t, b)
	want := tier1.Frame{tier1.Str("dev"), tier1.Uint(7), tier1.Int(5), tier1.Str("m"), tier1.Float(20), tier1.Str("°C")}
	if !f.Equal(want) {
		t.Errorf("frame %v, want %v", f, want)
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, tc := range []struct{ route, want string }{
		{`{"topic": "a/+/b", "routine": "nope"}`, "no routine"},
		{`{"topic": "a/b+/c", "routine": "synapse.telemetry"}`, "whole level"},
		{`{"topic": "a/#/c", "routine": "synapse.telemetry"}`, "whole level"},
		{`{"topic": "", "routine": "synapse.telemetry"}`, "topic"},
		{strings.Replace(exampleRoute, `"seq": "$.seq",`, "", 1), "seq: field of routine synapse.telemetry not mapped"},
		{strings.Replace(exampleRoute, `"{1}"`, `"{2}"`, 1), "has 1 '+' levels"},
		{strings.Replace(exampleRoute, `"{1}"`, `"{0}"`, 1), "has 1 '+' levels"},
		{strings.Replace(exampleRoute, `"$.seq"`, `"$."`, 1), "names no field"},
		{strings.Replace(exampleRoute, `"$.seq"`, `"$.v"`, 1), "read by another field"},
		{strings.Replace(exampleRoute, `"$.seq"`, `-1`, 1), "literal -1"},
		{strings.Replace(exampleRoute, `"$.seq"`, `"x"`, 1), `literal "x"`},
		{strings.Replace(exampleRoute, `"metric": "temp"`, `"metric": 3`, 1), "literal 3"},
		{strings.Replace(exampleRoute, `"metric": "temp"`, `"metric": null`, 1), "metric"},
		{strings.Replace(exampleRoute, `"metric": "temp"`, `"metrics": "temp"`, 1), "metrics: routine synapse.telemetry has no such field"},
		{strings.Replace(exampleRoute, `"routine"`, `"version": "2.0.0", "routine"`, 1), "version"},
	} {
		var r southbound.Route
		if err := json.Unmarshal([]byte(tc.route), &r); err != nil {
			t.Fatal(err)
		}
		_, err := southbound.Compile(r, registry(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.route, err, tc.want)
		}
	}
	var r southbound.Route
	if err := json.Unmarshal([]byte(`{"topic": 3}`), &r); err == nil {
		t.Error("a numeric topic was taken")
	}
}

// TestBatchHostile: every bad message is refused with ErrBadMessage,
// naming what is wrong; nothing panics.
func TestBatchHostile(t *testing.T) {
	m := compile(t, exampleRoute)
	mp := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := mp(map[string]any{"v": 1.0, "t": 1, "seq": 1})
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"empty", nil, "payload: empty: send a JSON object or a msgpack map"},
		{"not json nor msgpack", []byte("hello"), "payload: neither JSON nor msgpack: send a JSON object or a msgpack map"},
		{"text that starts with a msgpack map byte", []byte("\x81 hello"), "payload:"},
		{"one msgpack scalar", mp(uint64(104)), "payload: a msgpack uint: send a JSON object or a msgpack map"},
		{"json array", []byte(`[1,2]`), "JSON object"},
		{"json scalar", []byte(`21.5`), "JSON object"},
		{"missing field", []byte(`{"v": 1, "t": 1}`), "seq: missing"},
		{"null field", []byte(`{"v": 1, "t": 1, "seq": null}`), "seq: missing"},
		{"string for a number", []byte(`{"v": "21.5", "t": 1, "seq": 1}`), "value: $.v"},
		{"negative uint", []byte(`{"v": 1, "t": 1, "seq": -1}`), "seq: $.seq"},
		{"fraction for an int", []byte(`{"v": 1, "t": 1.5, "seq": 1}`), "ts: $.t"},
		{"huge int", []byte(`{"v": 1, "t": 1e300, "seq": 1}`), "ts: $.t"},
		{"object for a number", []byte(`{"v": {"x": 1}, "t": 1, "seq": 1}`), "value: $.v"},
		{"bool for a number", []byte(`{"v": true, "t": 1, "seq": 1}`), "value: $.v"},
		{"oversized", append([]byte(`{"v": 1, "t": 1, "seq": 1, "pad": "`), append([]byte(strings.Repeat("x", southbound.MaxPayload)), `"}`...)...), "more than"},
		{"msgpack truncated", good[:len(good)-1], ": $."},
		{"msgpack trailing", append(append([]byte{}, good...), 0xc0), "after the msgpack map"},
		{"msgpack array", mp([]any{1, 2}), "payload: a msgpack array: send a JSON object or a msgpack map"},
		{"msgpack int key", mp(map[int]any{1: 2}), "key"},
		{"msgpack str for a float", mp(map[string]any{"v": "1", "t": 1, "seq": 1}), "value: $.v"},
		{"msgpack huge map", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "payload"},
		{"msgpack bad utf8 skipped", mp(map[string]any{"v": 1.0, "t": 1, "seq": -3, "x": "\xff"}), ""},
		{"msgpack deep", append(bytesRepeat(0x91, 100), 0xc0), "payload"},
	} {
		_, err := m.Batch(nil, "plant/d/temp", tc.payload)
		if !errors.Is(err, southbound.ErrBadMessage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrBadMessage with %q", tc.name, err, tc.want)
		}
	}
	// A bad topic level for a typed field.
	n := compile(t, `{"topic": "s/+", "routine": "synapse.telemetry", "device_id": "d", "seq": "{1}", "ts": 1, "metric": "m", "value": 1}`)
	if _, err := n.Batch(nil, "s/abc", nil); !errors.Is(err, southbound.ErrBadMessage) || !strings.Contains(err.Error(), "seq: topic level") {
		t.Errorf("non-numeric level for a uint: %v", err)
	}
	if _, err := n.Batch(nil, "s", nil); !errors.Is(err, southbound.ErrBadMessage) {
		t.Errorf("topic shorter than the filter: %v", err)
	}
}

func bytesRepeat(b byte, n int) []byte { return []byte(strings.Repeat(string([]byte{b}), n)) }

func BenchmarkBatchJSON(b *testing.B) {
	m := compile(b, exampleRoute)
	p := []byte(`{"v": 21.5, "t": 1700000000000000000, "seq": 42}`)
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = m.Batch(dst[:0], "plant/line7/temp", p); err != nil {
			b.Fatal(err)
		}
	}
}
