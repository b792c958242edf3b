package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

func TestTier1Ack(t *testing.T) {
	e := &client.Tier1AckError{Code: "invalid_params", Message: "frame 3: bad"}
	if got, want := e.Error(), "invalid_params: frame 3: bad"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// The msgpack tags match the agent's answer.
	b, err := wire.Msgpack.Marshal(map[string]any{"ok": false, "batch_id": "b-9",
		"error": map[string]any{"code": "c", "message": "m", "retriable": true}})
	if err != nil {
		t.Fatal(err)
	}
	var ack client.Tier1Ack
	if err := wire.Msgpack.Unmarshal(b, &ack); err != nil {
		t.Fatal(err)
	}
	if ack.OK || ack.BatchID != "b-9" || ack.Error == nil || ack.Error.Code != "c" || ack.Error.Message != "m" || !ack.Error.Retriable {
		t.Errorf("ack = %+v (error %+v)", ack, ack.Error)
	}
	for _, tt := range []struct{ n, want int }{{0, 6}, {125, 6}, {126, 8}, {65535, 8}, {65536, 14}} {
		if got := client.WebSocketOverhead(tt.n); got != tt.want {
			t.Errorf("WebSocketOverhead(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func TestE2ETier1Stream(t *testing.T) {
	_, c := startAgent(t)
	d := tier1.Telemetry()
	routines, err := c.Tier1Routines(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(routines) == 0 || routines[0].CapabilityID != d.CapabilityID || routines[0].Hash != d.Hash() ||
		routines[0].Fields[2].Unit != "ns" || !routines[0].Fields[5].Optional {
		t.Fatalf("routines = %+v", routines)
	}

	s, err := c.DialTier1Stream(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := time.Now().UnixNano()
	const batches = 5
	for i := range batches {
		frames := []tier1.Frame{
			{tier1.Str("dev-a"), tier1.Uint(uint64(2*i + 1)), tier1.Int(ts + int64(2*i)), tier1.Str("t"), tier1.Float(20.5)},
			{tier1.Str("dev-b"), tier1.Uint(uint64(2*i + 2)), tier1.Int(ts + int64(2*i+1)), tier1.Str("t"), tier1.Float(1), tier1.Str("C")},
		}
		if err := s.Send(tier1.AppendBatch(nil, d.CapabilityID, d.Version, fmt.Sprintf("b-%d", i), frames, &d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Send([]byte{0xc0}); err != nil { // not a batch
		t.Fatal(err)
	}
	for i := range batches + 1 {
		data, err := s.Receive()
		if err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		var ack client.Tier1Ack
		if err := wire.Msgpack.Unmarshal(data, &ack); err != nil {
			t.Fatalf("ack %d: %v", i, err)
		}
		if i == batches {
			if ack.OK || ack.Error == nil || ack.Error.Code == "" {
				t.Errorf("ack of a non-batch = %+v, want a refusal with a code", ack)
			}
			continue
		}
		if !ack.OK || ack.Accepted != 2 || ack.BatchID != fmt.Sprintf("b-%d", i) {
			t.Errorf("ack %d = %+v, want ok, 2 accepted, batch b-%d", i, ack, i)
		}
	}

	// Page through the 10 frames 4 at a time.
	var got []string
	q := client.Tier1FrameQuery{Limit: 4}
	for range 10 {
		page, err := c.Tier1Frames(testCtx(t), d.CapabilityID, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range page.Frames {
			got = append(got, string(f))
		}
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
	}
	if len(got) != 2*batches {
		t.Fatalf("got %d frames, want %d", len(got), 2*batches)
	}
	// Frames come in the time order of their blocks: one block per device
	// for the batches the agent stored together, so the devices' frames
	// interleave or not depending on how the batches were grouped. Each
	// device's frames are in time order.
	first := map[string]string{}
	for _, f := range got {
		var m map[string]any
		if err := json.Unmarshal([]byte(f), &m); err != nil {
			t.Fatalf("frame %s: %v", f, err)
		}
		if dev, _ := m["device_id"].(string); first[dev] == "" {
			first[dev] = f
		}
	}
	want := fmt.Sprintf(`{"device_id":"dev-b","seq":2,"ts":%d,"metric":"t","value":1,"unit":"C"}`, ts+1)
	if first["dev-b"] != want {
		t.Errorf("first frame of dev-b = %s, want %s", first["dev-b"], want)
	}
	var firstA map[string]any
	if err := json.Unmarshal([]byte(first["dev-a"]), &firstA); err != nil || firstA["unit"] != nil || firstA["value"] != 20.5 || firstA["seq"] != 1.0 {
		t.Errorf("first frame of dev-a = %s, want seq 1, value 20.5 and no unit", first["dev-a"])
	}

	_, err = c.IngestTier1(testCtx(t), d.CapabilityID, []byte{0x93, 0xa1, 'x'})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code == "" {
		t.Errorf("a bad batch over HTTP: err = %v, want a 400 *APIError with a code", err)
	}
}
