package peer

import (
	"encoding/json"
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
}

func (a *BatchAnswer) appendJSONOrFail(t *testing.T) []byte {
	t.Helper()
	b, err := a.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
