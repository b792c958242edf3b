package cli

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
)

func TestGroupDigits(t *testing.T) {
	for _, tt := range []struct {
		in   int64
		want string
	}{{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"}, {1234000, "1,234,000"}, {-1234567, "-1,234,567"}} {
		if got := groupDigits(tt.in); got != tt.want {
			t.Errorf("groupDigits(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseTimeFlag(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct{ in, want, err string }{
		{"", "", ""},
		{"1700000000000000000", "1700000000000000000", ""},
		{"2025-01-02T03:04:05Z", "2025-01-02T03:04:05Z", ""},
		{"2025-01-02T03:04:05.5+02:00", "2025-01-02T03:04:05.5+02:00", ""},
		{"1h", strconv.FormatInt(now.Add(-time.Hour).UnixNano(), 10), ""},
		{" 90s ", strconv.FormatInt(now.Add(-90*time.Second).UnixNano(), 10), ""},
		{"-1h", "", "want an RFC 3339 time"},
		{"yesterday", "", "want an RFC 3339 time"},
		{"2025-01-02", "", "want an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTimeFlag("since", tt.in, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCSVValue(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, ""}, {`null`, ""}, {`"dev-1"`, "dev-1"}, {`"a\"b\n"`, "a\"b\n"}, {`"\u00e9"`, "é"},
		{`18446744073709551615`, "18446744073709551615"}, {`-9223372036854775808`, "-9223372036854775808"},
		{`21.5`, "21.5"}, {`1e-7`, "1e-7"}, {`true`, "true"}, {`"AAEC"`, "AAEC"},
	} {
		if got := csvValue(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("csvValue(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFieldList(t *testing.T) {
	d := tier1.Telemetry()
	var fields []client.Tier1Field
	for _, f := range d.Fields {
		fields = append(fields, client.Tier1Field{Name: f.Name, Type: string(f.Type), Unit: f.Unit, Optional: f.Optional})
	}
	got, want := fieldList(fields), "device_id:str seq:uint ts:int[ns] metric:str value:float unit:str?"
	if got != want {
		t.Errorf("fieldList = %q, want %q", got, want)
	}
}

func TestLiveText(t *testing.T) {
	got := liveText(12345.4, 1234000, 0, 3100*time.Microsecond)
	if want := "12,345 frames/s  1,234,000 acked  0 refused  p50 ack 3.1 ms"; got != want {
		t.Errorf("liveText = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{420 * time.Microsecond, "0.42 ms"}, {12 * time.Millisecond, "12.0 ms"}, {123456 * time.Microsecond, "123 ms"}} {
		if got := millis(tt.d); got != tt.want {
			t.Errorf("millis(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestScanFlatObject(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
		want     []string // key=value pairs as raw text
	}{
		{"frame", `{"device_id":"dev-1","seq":18446744073709551615,"ts":-5,"value":1e-7,"ok":true,"u":null}`, true,
			[]string{`"device_id"="dev-1"`, `"seq"=18446744073709551615`, `"ts"=-5`, `"value"=1e-7`, `"ok"=true`, `"u"=null`}},
		{"empty", `{}`, true, nil},
		{"spaces", " {\n\t\"a\" : \"x, }\" ,\r\n \"b\":2 } ", true, []string{`"a"="x, }"`, `"b"=2`}},
		{"escapes", `{"a\"b":"c\\\"d","e":"\u00e9"}`, true, []string{`"a\"b"="c\\\"d"`, `"e"="\u00e9"`}},
		{"nested object", `{"a":1,"b":{"c":2}}`, false, nil},
		{"array value", `{"a":[1]}`, false, nil},
		{"not an object", `[1,2]`, false, nil},
		{"trailing data", `{"a":1}x`, false, nil},
		{"truncated", `{"a":"x`, false, nil},
		{"missing colon", `{"a" 1}`, false, nil},
		{"empty input", ``, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			ok := scanFlatObject([]byte(tt.in), func(k, v []byte) { got = append(got, string(k)+"="+string(v)) })
			if ok != tt.ok || (tt.ok && !slices.Equal(got, tt.want)) {
				t.Errorf("scanFlatObject(%q) = %v %q, want %v %q", tt.in, ok, got, tt.ok, tt.want)
			}
		})
	}
}

// FuzzScanFlatObject checks the fast CSV path against encoding/json: when
// the scan accepts a valid JSON text, it finds exactly the members the
// decoder finds, and the cells are the same.
func FuzzScanFlatObject(f *testing.F) {
	for _, s := range []string{
		`{"device_id":"dev-0001","seq":1,"ts":1700000000000000000,"metric":"temperature","value":21.5}`,
		`{"a\"b":"c\\\"d","e":"\u00e9","n":null,"t":false}`, `{}`, ` { "a" : 1 } `, `{"a":{"b":1}}`, `{"a":1,"a":2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]string{}
		ok := scanFlatObject(b, func(k, v []byte) { got[jsonText(k)] = csvValue(v) })
		if !ok || !json.Valid(b) {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatalf("scan accepted %q, which does not decode as an object: %v", b, err)
		}
		want := map[string]string{}
		for k, v := range obj {
			want[k] = csvValue(v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("scan of %q = %q, encoding/json gives %q", b, got, want)
		}
	})
}
