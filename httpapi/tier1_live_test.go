package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// liveEvent is one "frames" event of GET /tier1/{id}/frames/stream.
type liveEvent struct {
	Frames        []map[string]any `json:"frames"`
	Skipped       int              `json:"skipped"`
	MissedBatches int              `json:"missed_batches"`
}

// openLive opens the live stream and waits for its first comment (the
// subscription is in place); events come on the returned channel.
func openLive(t *testing.T, ts *testServer, query, token string) <-chan liveEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.base+api("/tier1/synapse.telemetry/frames/stream"+query), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || sc.Text() != ": live" {
		t.Fatalf("first line %q, want the comment \": live\"", sc.Text())
	}
	out := make(chan liveEvent, 16)
	go func() {
		defer close(out)
		typ := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && typ == "frames":
				var ev liveEvent
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("event data %q: %v", line, err)
					return
				}
				out <- ev
			}
		}
	}()
	return out
}

func nextLive(t *testing.T, c <-chan liveEvent) liveEvent {
	t.Helper()
	select {
	case ev, ok := <-c:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(pollTimeout):
		t.Fatal("no frames event")
	}
	return liveEvent{}
}

func TestTier1LiveStream(t *testing.T) {
	ts := startServer(t)
	reader := createToken(t, ts, "reader", auth.ScopeTier1Read)
	all := openLive(t, ts, "", reader)
	one := openLive(t, ts, "?device_id=dev-b", reader)

	now := time.Now().UnixNano()
	ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "dev-a", 0, 3, now), withMsgpack()).wantStatus(t, http.StatusOK)
	ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "dev-b", 10, 2, now), withMsgpack()).wantStatus(t, http.StatusOK)

	var got []map[string]any
	for len(got) < 5 {
		got = append(got, nextLive(t, all).Frames...)
	}
	if len(got) != 5 || got[0]["device_id"] != "dev-a" || got[4]["device_id"] != "dev-b" || got[4]["value"] != 11.0 || got[4]["unit"] != "C" {
		t.Errorf("live frames = %v, want dev-a's 3 then dev-b's 2, as GET /frames shows them", got)
	}
	ev := nextLive(t, one)
	if len(ev.Frames) != 2 || ev.Frames[0]["device_id"] != "dev-b" || ev.Frames[1]["seq"] != 11.0 || ev.Skipped != 0 || ev.MissedBatches != 0 {
		t.Errorf("device_id=dev-b event = %+v, want dev-b's 2 frames only", ev)
	}

	t.Run("a duplicate batch is not sent again", func(t *testing.T) {
		ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("b1", "dev-b", 20, 1, now), withMsgpack()).wantStatus(t, http.StatusOK)
		ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("b1", "dev-b", 20, 1, now), withMsgpack()).wantStatus(t, http.StatusOK)
		ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "dev-b", 30, 1, now), withMsgpack()).wantStatus(t, http.StatusOK)
		var seqs []float64
		for len(seqs) < 2 {
			for _, f := range nextLive(t, one).Frames {
				seqs = append(seqs, f["seq"].(float64))
			}
		}
		if len(seqs) != 2 || seqs[0] != 20 || seqs[1] != 30 {
			t.Errorf("seqs after a duplicate = %v, want [20 30]", seqs)
		}
	})
	t.Run("a big batch sends its newest frames", func(t *testing.T) {
		ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "dev-b", 100, 700, now), withMsgpack()).wantStatus(t, http.StatusOK)
		ev := nextLive(t, one)
		if len(ev.Frames) != 500 || ev.Skipped != 200 || ev.Frames[499]["seq"] != 799.0 {
			t.Errorf("event of a 700-frame batch: %d frames, skipped %d; want the newest 500 and 200 skipped", len(ev.Frames), ev.Skipped)
		}
	})
	t.Run("revoking the token ends the stream", func(t *testing.T) {
		tok := ts.do(t, "POST", api("/tokens"), []byte(`{"name":"screen","scopes":["tier1:read"]}`)).object(t)
		c := openLive(t, ts, "", tok["token"].(string))
		ts.do(t, "DELETE", api("/tokens/"+tok["token_id"].(string)), nil).wantStatus(t, http.StatusNoContent)
		select {
		case _, ok := <-c:
			if ok {
				t.Errorf("an event after the revocation")
			}
		case <-time.After(2 * time.Second):
			t.Errorf("the stream of a revoked token is still open after 2 s")
		}
	})
	t.Run("errors", func(t *testing.T) {
		writer := createToken(t, ts, "writer-only", auth.ScopeTasksRead)
		ts.do(t, "GET", api("/tier1/synapse.telemetry/frames/stream"), nil, withToken("")).wantError(t, http.StatusUnauthorized, wire.CodeUnauthorized)
		ts.do(t, "GET", api("/tier1/synapse.telemetry/frames/stream"), nil, withToken(writer)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		ts.do(t, "GET", api("/tier1/no.such/frames/stream"), nil).wantError(t, http.StatusForbidden, wire.CodeCapabilityLacking)
	})
}

func TestTier1RoutinesStored(t *testing.T) {
	ts := startTier1Server(t, func(c *tier1.Config) { c.MaxBytesPerRoutine = 1 << 20 })
	type storedFigures struct {
		Frames   uint64 `json:"frames"`
		Bytes    uint64 `json:"bytes"`
		MaxBytes int64  `json:"max_bytes"`
		OldestTS *int64 `json:"oldest_ts"`
	}
	stored := func() storedFigures {
		t.Helper()
		var body struct {
			Routines []struct {
				CapabilityID string        `json:"capability_id"`
				Stored       storedFigures `json:"stored"`
			} `json:"routines"`
		}
		ts.do(t, "GET", api("/tier1/routines"), nil).decodeInto(t, &body)
		for _, r := range body.Routines {
			if r.CapabilityID == tier1.Telemetry().CapabilityID {
				return r.Stored
			}
		}
		t.Fatalf("no telemetry routine in %+v", body)
		return storedFigures{}
	}
	if st := stored(); st.Frames != 0 || st.Bytes != 0 || st.MaxBytes != 1<<20 || st.OldestTS != nil {
		t.Errorf("stored before any frame = %+v", st)
	}
	oldest := time.Now().Add(-time.Hour).UnixNano()
	ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "d2", 0, 10, oldest+1000), withMsgpack()).wantStatus(t, http.StatusOK)
	ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "d1", 0, 5, oldest), withMsgpack()).wantStatus(t, http.StatusOK)
	st := stored()
	if st.Frames != 15 || st.Bytes == 0 || st.OldestTS == nil || *st.OldestTS != oldest {
		t.Errorf("stored = %+v, want 15 frames, some bytes, oldest_ts %d", st, oldest)
	}
}

func TestTaskSummary(t *testing.T) {
	ts := startServer(t)
	for range 3 {
		ts.waitStatus(t, ts.submit(t, `{"task_type":"echo","payload":{}}`), wire.StatusCompleted)
	}
	id := ts.submit(t, `{"task_type":"sleep","payload":{"seconds":30}}`)
	ts.do(t, "POST", api("/task/"+id+"/cancel"), nil).wantStatus(t, http.StatusOK)
	ts.waitStatus(t, id, wire.StatusCancelled)
	var sum struct {
		Total    int            `json:"total"`
		ByStatus map[string]int `json:"by_status"`
	}
	ts.do(t, "GET", api("/tasks/summary"), nil).decodeInto(t, &sum)
	if sum.Total != 4 || sum.ByStatus["completed"] != 3 || sum.ByStatus["cancelled"] != 1 || len(sum.ByStatus) != 2 {
		t.Errorf("summary = %+v, want 3 completed and 1 cancelled", sum)
	}
	reader := createToken(t, ts, "tier1", auth.ScopeTier1Read)
	ts.do(t, "GET", api("/tasks/summary"), nil, withToken(reader)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)

	m := string(ts.do(t, "GET", "/metrics", nil).body)
	if !strings.Contains(m, "\nsynapse_store_size_bytes ") {
		t.Errorf("/metrics lacks synapse_store_size_bytes")
	}
}
