package httpapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

// TestStreamChunkSSE: a handler's partial results reach an SSE client as
// "event: log" whose data is a wire.StreamChunk, between executing and
// completed, in order, and again on a replay from Last-Event-ID.
func TestStreamChunkSSE(t *testing.T) {
	ts := startServer(t)
	err := ts.a.Handle(agent.Handler{Type: wire.SupportedTaskType{Type: "tokens"}, Func: func(ctx context.Context, r *agent.Run) (any, error) {
		for i, tok := range []string{"syn", "ap", "se"} {
			if err := r.Chunk(tok, i == 2); err != nil {
				return nil, err
			}
		}
		return "synapse", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := ts.submit(t, `{"task_type":"tokens","payload":{}}`)
	r, _ := ts.openStream(t, id, "")
	evs := readAll(t, r)
	var toks []string
	logs := 0
	for _, e := range evs {
		if e.event != "log" {
			continue
		}
		logs++
		var c wire.StreamChunk
		b, _ := json.Marshal(e.data)
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("log event %v: %v", e.data, err)
		}
		var tok string
		if err := json.Unmarshal(c.Data, &tok); err != nil || c.TaskID != id || c.Seq != len(toks)+1 || c.Final != (c.Seq == 3) {
			t.Errorf("chunk %+v (data %s): %v", c, c.Data, err)
		}
		toks = append(toks, tok)
	}
	if logs != 3 || len(toks) != 3 || toks[0]+toks[1]+toks[2] != "synapse" {
		t.Fatalf("chunks %v in events %v", toks, describe(evs))
	}
	if evs[len(evs)-1].event != "complete" {
		t.Errorf("last event = %v, want complete", evs[len(evs)-1])
	}
	// A replay from the first chunk's id resumes with the second.
	var first uint64
	for _, e := range evs {
		if e.event == "log" {
			first = e.id
			break
		}
	}
	r2, _ := ts.openStream(t, id, strconv.FormatUint(first, 10))
	rest := readAll(t, r2)
	if len(rest) == 0 {
		t.Fatalf("replay after %d is empty", first)
	}
	if rest[0].event != "log" || rest[0].data["seq"] != float64(2) {
		t.Errorf("replay after %d = %v (first data %v)", first, describe(rest), rest[0].data)
	}
}
