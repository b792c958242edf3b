package peer

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestBatchJSON: the hand-written encoders of batches, their answers and
// Accepted write what wire.JSON writes.
func TestBatchJSON(t *testing.T) {
	env := json.RawMessage(`{"tp_version":"1.0.0","payload":{"a":"<b> & \u2028"}}`)
	req := &BatchRequest{Messages: []BatchItem{{Seq: 7, Envelope: env}, {Seq: 9, Prev: 7, Envelope: env}}}
	ans := &BatchAnswer{Results: []BatchResult{
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
		"request":   {req.appendJSON(nil), req},
		"answer":    {gotAns, ans},
		"empty":     {(&BatchAnswer{}).appendJSONOrFail(t), &BatchAnswer{Results: []BatchResult{}}},
		"accepted":  {(&Accepted{Accepted: true, MessageID: "m\"1"}).appendJSON(nil), &Accepted{Accepted: true, MessageID: "m\"1"}},
		"duplicate": {(&Accepted{Accepted: true, MessageID: "m2", Duplicate: true, Code: wire.CodeIDDuplicate}).appendJSON(nil), &Accepted{Accepted: true, MessageID: "m2", Duplicate: true, Code: wire.CodeIDDuplicate}},
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
	if back, ok := scanBatchRequest(req.appendJSON(nil)); !ok || !reflect.DeepEqual(back, req) {
		t.Errorf("request read back: %v %+v", ok, back)
	}
	ok200 := &BatchAnswer{Results: []BatchResult{ans.Results[0], {Status: 503, RetryAfterMS: 1000}}}
	var back BatchAnswer
	if !scanBatchAnswer(ok200.appendJSONOrFail(t), &back) || !reflect.DeepEqual(&back, ok200) {
		t.Errorf("answer read back: %+v", back)
	}
}

func (a *BatchAnswer) appendJSONOrFail(t *testing.T) []byte {
	t.Helper()
	b, err := a.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzBatchScan: what the fast readers of batches and answers accept,
// encoding/json reads the same way.
func FuzzBatchScan(f *testing.F) {
	env := json.RawMessage(`{"tp_version":"1.0.0","payload":{"a":["<b>",1.5e3,null]}}`)
	req := &BatchRequest{Messages: []BatchItem{{Seq: 7, Envelope: env}, {Seq: 18446744073709551615, Prev: 7, Envelope: env}}}
	f.Add(req.appendJSON(nil))
	ans := &BatchAnswer{Results: []BatchResult{{Status: 202, Body: json.RawMessage(`{"accepted":true}`)}, {Status: 503, RetryAfterMS: 1000}}}
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
		if got, ok := scanBatchRequest(b); ok {
			var want BatchRequest
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%q: read as a batch, encoding/json: %v", b, err)
			}
			if len(got.Messages) != len(want.Messages) || len(got.Messages) > 0 && !reflect.DeepEqual(got.Messages, want.Messages) {
				t.Fatalf("%q: read\n%+v\nencoding/json\n%+v", b, got.Messages, want.Messages)
			}
		}
		var got BatchAnswer
		if scanBatchAnswer(b, &got) {
			var want BatchAnswer
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%q: read as an answer, encoding/json: %v", b, err)
			}
			if len(got.Results) != len(want.Results) || len(got.Results) > 0 && !reflect.DeepEqual(got.Results, want.Results) {
				t.Fatalf("%q: read\n%+v\nencoding/json\n%+v", b, got.Results, want.Results)
			}
		}
	})
}
