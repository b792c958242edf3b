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

// appendCases are items whose encoding takes each way of appendItem: a
// payload copied as it is, compacted, escaped or refused, times out of
// range, strings encoding/json escapes.
func appendCases() []Item {
	at := time.Date(2026, 12, 3, 11, 0, 0, 123456789, time.FixedZone("x", -(3*3600+1800)))
	items := sampleItems()
	for _, p := range []string{`{"a": 1}`, "{\"a\":\n\"x y\"}", `"<b>&</b>"`, "\"\u2028\"", `{"a":`, `nul`, ``, `"a b"`, `{"k":"v\"<"}`} {
		items = append(items, Item{ID: "p", Payload: json.RawMessage(p), CreatedAt: at})
	}
	return append(items,
		Item{ID: "<id>&\u2029\xff", Type: "a\"b\\c\n", Peer: "p&q", CorrelationID: "c<", LastError: "e>", Payload: json.RawMessage(`1`), DeadAt: at},
		Item{ID: "year", Payload: json.RawMessage(`1`), CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		Item{ID: "year", Payload: json.RawMessage(`1`), NextAttempt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		Item{ID: "year", Payload: json.RawMessage(`1`), DeadAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		Item{ID: "zone", Payload: json.RawMessage(`1`), CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600))},
	)
}

// TestAppendItem: appendItem writes what json.Marshal writes, or fails
// where it fails.
func TestAppendItem(t *testing.T) {
	for i, it := range appendCases() {
		want, wantErr := json.Marshal(&it)
		got, err := appendItem([]byte("prefix"), &it)
		if (err == nil) != (wantErr == nil) {
			t.Errorf("item %d: appendItem error %v, encoding/json %v", i, err, wantErr)
			continue
		}
		if err == nil && string(got) != "prefix"+string(want) {
			t.Errorf("item %d:\n got %s\nwant %s", i, got[len("prefix"):], want)
		}
	}
}

// FuzzAppendItem: whatever an item holds, appendItem writes what
// json.Marshal writes, or fails where it fails.
func FuzzAppendItem(f *testing.F) {
	for _, it := range appendCases() {
		f.Add(it.ID, it.Peer, it.LastError, []byte(it.Payload), it.Seq, it.Attempts, it.CreatedAt.UnixNano(), 0, it.Unreachable)
	}
	f.Fuzz(func(t *testing.T, id, peer, lastErr string, payload []byte, seq uint64, attempts int, at int64, zone int, unreachable bool) {
		tm := time.Unix(0, at).In(time.FixedZone("z", zone%(30*3600)))
		it := Item{ID: id, Peer: peer, Type: peer + id, LastError: lastErr, Payload: payload, Seq: seq, Attempts: attempts,
			CreatedAt: tm, NextAttempt: tm.AddDate(int(seq%20000), 0, 0), Unreachable: unreachable}
		if attempts%2 == 0 {
			it.DeadAt = tm
		}
		want, wantErr := json.Marshal(&it)
		got, err := appendItem(nil, &it)
		if (err == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Fatalf("%+v:\nappendItem    %s (%v)\nencoding/json %s (%v)", it, got, err, want, wantErr)
		}
	})
}

func BenchmarkAppendItem(b *testing.B) {
	it := sampleItems()[0]
	it.Payload = json.RawMessage(`{"tp_version":"1.0.0","message_id":"0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","message_type":"p2p:task_status_update",` +
		`"sender":{"agent_id":"edge_a"},"receiver":{"agent_id":"edge_b"},"timestamp":"2026-12-03T11:00:00.123Z",` +
		`"payload":{"task_id":"01a23c63-4f62-797c-a50d-a2ffc3990fca","status":"confirmed","progress":0,"message":"reported by edge_b"},"signature":"` +
		`ed25519:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
	raw, _ := json.Marshal(&it)
	b.SetBytes(int64(len(raw)))
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = appendItem(buf[:0], &it); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fresh", func(b *testing.B) { // as the store calls it: one allocation
		b.ReportAllocs()
		for b.Loop() {
			if _, err := appendItem(nil, &it); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&it); err != nil {
				b.Fatal(err)
			}
		}
	})
}
