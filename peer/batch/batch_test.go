package batch

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestJSON: the hand-written encoders of batches and their answers write
// what wire.JSON writes, and the fast readers read it back.
func TestJSON(t *testing.T) {
	env := json.RawMessage(`{"tp_version":"1.0.0","payload":{"a":"<b> & \u2028"}}`)
	req := &Request{Messages: []Item{{Seq: 7, Envelope: env}, {Seq: 9, Prev: 7, Envelope: env}}}
	ans := &Answer{Results: []Result{
		{Status: 202, Body: json.RawMessage(`{"accepted":true,"message_id":"m1"}`)},
		{Status: 503, Error: wire.Errorf(wire.CodeAgentNotReady, "later <now>"), RetryAfterMS: 1000},
		{Status: 401, Error: wire.Errorf(wire.CodeIDUnknownSender, "no").With("sender", "edge_x")},
	}}
	gotAns, err := ans.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		got []byte
		v   any
	}{
		"request": {req.AppendJSON(nil), req},
		"answer":  {gotAns, ans},
		"empty":   {(&Answer{}).appendJSONOrFail(t), &Answer{Results: []Result{}}},
	} {
		want, err := wire.JSON.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(c.got) != string(want) {
			t.Errorf("%s:\n%s\nwant\n%s", name, c.got, want)
		}
	}
	// What they write is read back by the fast path.
	if back, ok := scanRequest(req.AppendJSON(nil)); !ok || !reflect.DeepEqual(back, req) {
		t.Errorf("request read back: %v %+v", ok, back)
	}
	ok200 := &Answer{Results: []Result{ans.Results[0], {Status: 503, RetryAfterMS: 1000}}}
	var back Answer
	if !scanAnswer(ok200.appendJSONOrFail(t), &back) || !reflect.DeepEqual(&back, ok200) {
		t.Errorf("answer read back: %+v", back)
	}
}

func (a *Answer) appendJSONOrFail(t *testing.T) []byte {
	t.Helper()
	b, err := a.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzScan: what the fast readers of batches and answers accept,
// encoding/json reads the same way.
func FuzzScan(f *testing.F) {
	env := json.RawMessage(`{"tp_version":"1.0.0","payload":{"a":["<b>",1.5e3,null]}}`)
	req := &Request{Messages: []Item{{Seq: 7, Envelope: env}, {Seq: 18446744073709551615, Prev: 7, Envelope: env}}}
	f.Add(req.AppendJSON(nil))
	ans := &Answer{Results: []Result{{Status: 202, Body: json.RawMessage(`{"accepted":true}`)}, {Status: 503, RetryAfterMS: 1000}}}
	b, err := ans.AppendJSON(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{`{"messages":[]}`, ` { "messages" : [ { "envelope" : null , "seq" : 1 } ] } `,
		`{"messages":[{"seq":1,"seq":2}]}`, `{"messages":[{"Seq":1}]}`, `{"messages":[{"seq":01}]}`, `{"messages":[{"seq":1.0}]}`,
		`{"messages":[{"seq":18446744073709551616}]}`, `{"messages":[{"seq":-1}]}`, `{"messages":[{"envelope":{"a":"\u00e9"}}]}`,
		`{"results":[{"status":200,"body":null}]}`, `{"results":[{"status":401,"error":{"code":"x"}}]}`,
		`{"results":[{"status":202,"body":"x"}]} x`, `{"results":[{"status":202,"body":{}},]}`, `{"results":[{"status":2020}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, ok := scanRequest(b); ok {
			var want Request
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%q: read as a batch, encoding/json: %v", b, err)
			}
			if len(got.Messages) != len(want.Messages) || len(got.Messages) > 0 && !reflect.DeepEqual(got.Messages, want.Messages) {
				t.Fatalf("%q: read\n%+v\nencoding/json\n%+v", b, got.Messages, want.Messages)
			}
		}
		var got Answer
		if scanAnswer(b, &got) {
			var want Answer
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%q: read as an answer, encoding/json: %v", b, err)
			}
			if len(got.Results) != len(want.Results) || len(got.Results) > 0 && !reflect.DeepEqual(got.Results, want.Results) {
				t.Fatalf("%q: read\n%+v\nencoding/json\n%+v", b, got.Results, want.Results)
			}
		}
	})
}
