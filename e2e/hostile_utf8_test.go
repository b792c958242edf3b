package e2e_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// TestHostileInvalidUTF8 (issue #15, item 5): text that is not valid UTF-8
// is refused where it enters — task bodies in JSON and msgpack, P2P
// envelopes, tier-1 str fields — with 400 TP-VAL002, and nothing of it is
// stored.
func TestHostileInvalidUTF8(t *testing.T) {
	a := startAgent(t, agentOpts{})
	mp := func(v any) []byte {
		b, err := wire.Msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	d := tier1.Telemetry()
	badBatch := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "bad-utf8", []tier1.Frame{
		{tier1.Str("dev\xff"), tier1.Uint(1), tier1.Int(1), tier1.Str("temp"), tier1.Float(1), tier1.Str("C")}}, &d)
	for _, tc := range []struct {
		name, path, ctype string
		body              []byte
	}{
		{"task JSON", prefix + "/task", "application/json", []byte(`{"task_type":"echo","payload":{"s":"` + "\xff" + `"}}`)},
		{"task JSON in a key", prefix + "/task", "application/json", []byte(`{"task_type":"echo","payload":{"k` + "\xc3\x28" + `":1}}`)},
		{"task msgpack", prefix + "/task", "application/msgpack", mp(map[string]any{"task_type": "echo", "payload": map[string]any{"s": "\xff"}})},
		{"envelope JSON", prefix + "/message", "application/json", []byte(`{"tp_version":"1.0.0","message_id":"x","message_type":"p2p:heartbeat","payload":{"s":"` + "\xed\xa0\x80" + `"}}`)},
		{"envelope msgpack", prefix + "/message", "application/msgpack", mp(map[string]any{"tp_version": "1.0.0", "message_id": "x", "message_type": "p2p:heartbeat\xff"})},
		{"tier-1 str field", prefix + "/tier1/" + d.CapabilityID, "application/msgpack", badBatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.call(http.MethodPost, tc.path, tc.body, "Content-Type", tc.ctype)
			if r.status != http.StatusBadRequest || tpCode(string(r.body)) != "TP-VAL002" {
				t.Errorf("got %s, want 400 TP-VAL002", r)
			}
		})
	}
	r := a.call(http.MethodGet, prefix+"/tasks", nil)
	var list struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Tasks) != 0 {
		t.Errorf("GET /tasks: %s, want no task stored", r)
	}
	r = a.call(http.MethodGet, prefix+"/tier1/"+d.CapabilityID+"/frames", nil)
	if r.status != http.StatusOK || json.Valid(r.body) == false {
		t.Errorf("GET frames: %s", r)
	}
	var frames struct {
		Frames []json.RawMessage `json:"frames"`
	}
	if json.Unmarshal(r.body, &frames) == nil && len(frames.Frames) != 0 {
		t.Errorf("frames stored from a refused batch: %s", r.body)
	}
}
