package tier1_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
)

func TestAppendJSON(t *testing.T) {
	tel := tier1.Telemetry()
	mix := mixed()
	tests := []struct {
		name  string
		d     *tier1.Descriptor
		frame tier1.Frame
		want  string
	}{
		{"telemetry", &tel, exampleFrame(),
			`{"device_id":"sensor-7","seq":42,"ts":1700000000000000000,"metric":"temp","value":21.5,"unit":"C"}`},
		{"absent optional left out", &tel, exampleFrame()[:5],
			`{"device_id":"sensor-7","seq":42,"ts":1700000000000000000,"metric":"temp","value":21.5}`},
		{"every type", &mix,
			tier1.Frame{tier1.Str("q\"<\n\x01é"), tier1.Int(math.MinInt64), tier1.Uint(math.MaxUint64), tier1.Float(1e21), tier1.Bool(false), tier1.Bin([]byte{0xff, 0, 1})},
			`{"s":"q\"<\n\u0001é","i":-9223372036854775808,"u":18446744073709551615,"f":1e+21,"b":false,"x":"/wAB"}`},
		{"null in the middle, small float", &mix,
			tier1.Frame{tier1.Str(""), tier1.Null(), tier1.Uint(0), tier1.Float(1e-7)},
			`{"s":"","u":0,"f":1e-7}`},
		{"NaN as null", &mix,
			tier1.Frame{tier1.Str("a"), tier1.Null(), tier1.Uint(0), tier1.Float(math.NaN())},
			`{"s":"a","u":0,"f":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.frame.AppendJSON([]byte("x"), tt.d)
			if string(got) != "x"+tt.want {
				t.Errorf("AppendJSON =\n%s\nwant\n%s", got[1:], tt.want)
			}
			// JSONObject through encoding/json means the same.
			fromMap, err := json.Marshal(tt.frame.JSONObject(tt.d))
			if err != nil {
				t.Fatal(err)
			}
			if a, b := decodeJSON(t, got[1:]), decodeJSON(t, fromMap); !reflect.DeepEqual(a, b) {
				t.Errorf("AppendJSON means %v, JSONObject means %v", a, b)
			}
		})
	}
}

func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return m
}
