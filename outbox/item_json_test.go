package outbox

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// plainDecode is what encoding/json alone makes of b.
func plainDecode(b []byte) (Item, error) {
	type plain Item
	var p plain
	err := json.Unmarshal(b, &p)
	return Item(p), err
}

func sampleItems() []Item {
	at := time.Date(2026, 12, 3, 11, 0, 0, 123456789, time.UTC)
	return []Item{
		{ID: "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", Seq: 42, Peer: "edge_gw_01a2b3", Type: "p2p:task_request",
			CorrelationID: "t-1", Payload: json.RawMessage(`{"task":{"id":"t","payload":{"msg":"h\"i","n":[1,2.5e3,null,true]}}}`),
			CreatedAt: at, NextAttempt: at.Add(time.Second)},
		{ID: "x", Seq: 1<<64 - 1, URL: "http://127.0.0.1:9/cb?a=1&b=é", Type: "callback", Payload: json.RawMessage(`"text"`),
			CreatedAt: at, NextAttempt: at, Attempts: 7, LastError: "503: Service Unavailable – retry",
			DeadAt: at.Add(time.Hour), Unreachable: true},
		{ID: "y", Payload: json.RawMessage(`null`)},
		{ID: "z", Payload: json.RawMessage(`12`), Attempts: -3},
	}
}

// TestItemJSONRoundTrip: what Put writes (json.Marshal) decodes on the
// fast path to the item written, and to what encoding/json makes of it.
func TestItemJSONRoundTrip(t *testing.T) {
	for _, want := range sampleItems() {
		b, err := json.Marshal(&want)
		if err != nil {
			t.Fatal(err)
		}
		var fast Item
		if !decodeItem(b, &fast) {
			t.Fatalf("the fast path refused what Marshal wrote: %s", b)
		}
		var got Item
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		plain, _ := plainDecode(b)
		if !reflect.DeepEqual(got, plain) || !reflect.DeepEqual(fast, plain) {
			t.Errorf("%s:\nfast    %+v\nplain   %+v", b, fast, plain)
		}
		if !got.CreatedAt.Equal(want.CreatedAt) || string(got.Payload) != string(want.Payload) || got.Seq != want.Seq {
			t.Errorf("decoded %+v, wrote %+v", got, want)
		}
	}
}

// TestItemJSONOtherForms: forms Put does not write are read by
// encoding/json, with its result or its error.
func TestItemJSONOtherForms(t *testing.T) {
	for _, in := range []string{
		`{ "id": "a", "seq": 1 }`,
		`{"ID":"a","Seq":2}`,
		`{"id":"a\u00e9","type":"t\n"}`,
		`{"id":"a","unknown":{"x":1},"seq":3}`,
		`{"id":null,"seq":4}`,
		`{"id":"a","seq":1.5}`,
		`{"id":"a","seq":-1}`,
		`{"id":"a","seq":18446744073709551616}`,
		`{"id":"a","payload":{1:2}}`,
		`{"id":"a","payload":tru}`,
		`{"id":"a","payload":{"a":"}"}}`,
		`{"id":"a","created_at":"2026-13-01T00:00:00Z"}`,
		`{"id":"a","created_at":"2026-12-01 00:00:00Z"}`,
		`{"id":"a","unreachable":1}`,
		`{"id":"a"}x`,
		`{"id":"a",}`,
		`{"id":"\xff"}`,
		`{"id":"a"`,
		`{}`,
		`[]`,
		``,
	} {
		var got Item
		gotErr := json.Unmarshal([]byte(in), &got)
		want, wantErr := plainDecode([]byte(in))
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s: got %+v, %v; encoding/json %+v, %v", in, got, gotErr, want, wantErr)
		}
	}
}

// FuzzItemJSON: the fast path never decodes anything to other than what
// encoding/json makes of it, nor accepts what encoding/json refuses.
func FuzzItemJSON(f *testing.F) {
	for _, it := range sampleItems() {
		b, _ := json.Marshal(&it)
		f.Add(b)
	}
	f.Add([]byte(`{"id":"a","payload":{"a":["}",{"b":"\"]"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast Item
		if !decodeItem(b, &fast) {
			return
		}
		want, err := plainDecode(b)
		if err != nil {
			t.Fatalf("the fast path took %q, encoding/json refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q:\nfast  %+v\nplain %+v", b, fast, want)
		}
	})
}

func BenchmarkItemJSON(b *testing.B) {
	raw, _ := json.Marshal(&sampleItems()[0])
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var it Item
			if err := it.UnmarshalJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := plainDecode(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
