package tier1export

import (
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
)

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

func TestWriter(t *testing.T) {
	frames := []string{
		`{"device_id":"dev-1","seq":1,"value":20.5,"unit":"C"}`,
		`{"device_id":"a,\"b\"","seq":2,"value":null}`,
		`{"device_id":"dev-3","seq":3,"value":1,"extra":{"nested":true}}`, // not flat: the slow way
	}
	t.Run("csv", func(t *testing.T) {
		var b strings.Builder
		w := NewWriter(&b, "csv", []string{"device_id", "seq", "value", "unit"})
		for _, f := range frames {
			if err := w.Write(json.RawMessage(f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		want := "device_id,seq,value,unit\ndev-1,1,20.5,C\n\"a,\"\"b\"\"\",2,,\ndev-3,3,1,\n"
		if b.String() != want {
			t.Errorf("CSV =\n%s\nwant\n%s", b.String(), want)
		}
	})
	t.Run("empty csv has its header", func(t *testing.T) {
		var b strings.Builder
		w := NewWriter(&b, "csv", []string{"a", "b"})
		if err := w.Flush(); err != nil || b.String() != "a,b\n" {
			t.Errorf("empty CSV = %q, %v; want the header line", b.String(), err)
		}
	})
	t.Run("jsonl", func(t *testing.T) {
		var b strings.Builder
		w := NewWriter(&b, "jsonl", nil)
		for _, f := range frames {
			if err := w.Write(json.RawMessage(f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil || b.String() != strings.Join(frames, "\n")+"\n" {
			t.Errorf("JSON Lines = %q, %v", b.String(), err)
		}
	})
	t.Run("a frame that is not an object", func(t *testing.T) {
		w := NewWriter(io.Discard, "csv", []string{"a"})
		if err := w.Write(json.RawMessage(`[1,2]`)); err == nil || !strings.Contains(err.Error(), "decode frame") {
			t.Errorf("error = %v, want a decode error", err)
		}
	})
}
