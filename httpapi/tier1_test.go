package httpapi_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

func withMsgpack() reqOpt { return withHeader("Content-Type", wire.ContentMsgpack) }

// telemetryBatch encodes n telemetry frames from device dev.
func telemetryBatch(batchID, dev string, first, n int, ts int64) []byte {
	d := tier1.Telemetry()
	frames := make([]tier1.Frame, n)
	for i := range frames {
		frames[i] = tier1.Frame{tier1.Str(dev), tier1.Uint(uint64(first + i)), tier1.Int(ts + int64(first+i)),
			tier1.Str("temp"), tier1.Float(float64(first + i)), tier1.Str("C")}
	}
	return tier1.AppendBatch(nil, d.CapabilityID, d.Version, batchID, frames, &d)
}

// frames reads back every stored telemetry frame (following page tokens).
func (ts *testServer) frames(t *testing.T, query string) []map[string]any {
	t.Helper()
	var all []map[string]any
	tok := ""
	for range 100 {
		q := "?limit=1000" + query
		if tok != "" {
			q += "&page_token=" + tok
		}
		r := ts.do(t, "GET", api("/tier1/synapse.telemetry/frames"+q), nil)
		r.wantStatus(t, http.StatusOK)
		var page struct {
			Frames []map[string]any `json:"frames"`
			Next   string           `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatalf("frames page: %v\n%s", err, r.body)
		}
		all = append(all, page.Frames...)
		if page.Next == "" {
			return all
		}
		tok = page.Next
	}
	t.Fatal("more than 100 pages of frames")
	return nil
}

func TestTier1NonGoEncoder(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; the non-Go encoder test needs it")
	}
	ts := startServer(t)
	const base = int64(1795000000000000000)
	out, err := exec.Command(node, "testdata/telemetry_batch.js", fmt.Sprint(base)).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	body, err := hex.DecodeString(string(out))
	if err != nil {
		t.Fatalf("node output is not hex: %v", err)
	}
	r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), body, withMsgpack())
	r.wantStatus(t, http.StatusOK)
	ack := r.object(t)
	if ack["ok"] != true || ack["accepted"] != float64(4) || ack["batch_id"] != "node-batch-1" {
		t.Fatalf("ack = %v, want ok, accepted 4, batch_id node-batch-1", ack)
	}
	got := ts.frames(t, "")
	want := []string{
		`{"device_id":"node-dev-1","seq":200,"ts":1795000000000000000,"metric":"temp","value":20,"unit":"C"}`,
		`{"device_id":"node-dev-1","seq":513,"ts":1795000000000000001,"metric":"temp","value":21.25,"unit":"C"}`,
		`{"device_id":"node-dev-2","seq":70000,"ts":1795000000000000002,"metric":"humidity","value":0.5}`,
		`{"device_id":"node-dev-2","seq":3,"ts":1795000000000000003,"metric":"temp","value":-5}`,
	}
	if len(got) != len(want) {
		t.Fatalf("read back %d frames, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		b, _ := json.Marshal(got[i])
		if !jsonEqual(t, string(b), w) {
			t.Errorf("frame %d = %s, want %s", i, b, w)
		}
	}
}

func TestTier1IngestAndQuery(t *testing.T) {
	ts := startServer(t)
	now := time.Now().UnixNano()
	for i, dev := range []string{"a", "b"} {
		r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch(fmt.Sprintf("b%d", i), dev, i*10, 10, now), withMsgpack())
		r.wantStatus(t, http.StatusOK)
	}
	t.Run("repeated batch_id stores nothing twice", func(t *testing.T) {
		r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("b0", "a", 0, 10, now), withMsgpack())
		r.wantStatus(t, http.StatusOK)
		if ack := r.object(t); ack["duplicate"] != true {
			t.Errorf("ack = %v, want duplicate true", ack)
		}
		if got := len(ts.frames(t, "")); got != 20 {
			t.Errorf("stored %d frames, want 20", got)
		}
	})
	t.Run("the same batch_id from another token is another batch", func(t *testing.T) {
		tok := createToken(t, ts, "device", auth.ScopeTier1Write)
		r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("b0", "c", 100, 5, now), withMsgpack(), withToken(tok))
		r.wantStatus(t, http.StatusOK)
		if got := len(ts.frames(t, "&device_id=c")); got != 5 {
			t.Errorf("device c has %d frames, want 5", got)
		}
	})
	t.Run("time order, device filter, time range, paging", func(t *testing.T) {
		all := ts.frames(t, "")
		for i := 1; i < len(all); i++ {
			if all[i]["ts"].(float64) < all[i-1]["ts"].(float64) {
				t.Fatalf("frames not in time order at %d", i)
			}
		}
		if got := len(ts.frames(t, "&device_id=b")); got != 10 {
			t.Errorf("device b: %d frames, want 10", got)
		}
		q := fmt.Sprintf("&since=%d&until=%d", now+5, now+15)
		if got := len(ts.frames(t, q)); got != 10 {
			t.Errorf("range [5,15): %d frames, want 10", got)
		}
		r := ts.do(t, "GET", api("/tier1/synapse.telemetry/frames?limit=7"), nil)
		var page struct {
			Frames []any  `json:"frames"`
			Next   string `json:"next_page_token"`
		}
		_ = json.Unmarshal(r.body, &page)
		if len(page.Frames) != 7 || page.Next == "" {
			t.Errorf("limit=7: %d frames, next %q", len(page.Frames), page.Next)
		}
	})
	t.Run("routines list the built-in with its hash", func(t *testing.T) {
		r := ts.do(t, "GET", api("/tier1/routines"), nil)
		r.wantStatus(t, http.StatusOK)
		d := tier1.Telemetry()
		if !strings.Contains(string(r.body), d.Hash()) {
			t.Errorf("routines answer lacks the telemetry hash %s: %s", d.Hash(), r.body)
		}
	})
	t.Run("scopes", func(t *testing.T) {
		tok := createToken(t, ts, "reader", auth.ScopeTasksWrite)
		r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("x", "a", 0, 1, now), withMsgpack(), withToken(tok))
		r.wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
	})
}

func TestTier1HostileInput(t *testing.T) {
	ts := startServer(t)
	d := tier1.Telemetry()
	good := telemetryBatch("", "a", 0, 1, 1)
	hdr := []byte{0x93, 0xb1}
	hdr = append(hdr, "synapse.telemetry"...)
	hdr = append(hdr, 0xa5)
	hdr = append(hdr, "1.0.0"...)
	deep := append(append([]byte{}, hdr...), bytes.Repeat([]byte{0x91}, 1000)...)
	deep = append(deep, 0xc0)
	wrongType := tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", []tier1.Frame{
		{tier1.Str("a"), tier1.Uint(1), tier1.Int(1), tier1.Str("m"), tier1.Float(1), tier1.Str("u")},
		{tier1.Str("a"), tier1.Uint(2), tier1.Int(2), tier1.Str("m"), tier1.Str("not a number"), tier1.Str("u")},
	}, nil)
	cases := []struct {
		name   string
		body   []byte
		ct     string
		status int
		code   wire.ErrorCode
		want   string // in the message
	}{
		{"2^32 frames declared", append(append([]byte{}, hdr...), 0xdd, 0xff, 0xff, 0xff, 0xff), wire.ContentMsgpack, 400, wire.CodeMessageFormatInvalid, "frames"},
		{"nesting 1000 deep", deep, wire.ContentMsgpack, 400, "", ""},
		{"wrong field type", wrongType, wire.ContentMsgpack, 400, wire.CodeInvalidParams, "frame 1"},
		{"unknown routine", tier1.AppendBatch(nil, "no.such", "1.0.0", "", nil, nil), wire.ContentMsgpack, 403, wire.CodeCapabilityLacking, "no.such"},
		{"truncated", good[:len(good)-3], wire.ContentMsgpack, 400, wire.CodeInvalidParams, "truncated"},
		{"not msgpack content type", good, "application/json", 415, wire.CodeUnsupportedMedia, ""},
		{"wrong routine for the route", tier1.AppendBatch(nil, "no.such", "1.0.0", "", nil, nil), wire.ContentMsgpack, 403, wire.CodeCapabilityLacking, ""},
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), c.body, withHeader("Content-Type", c.ct))
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %v", el)
			}
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			e := r.object(t)["error"].(map[string]any)
			if c.code != "" && e["code"] != string(c.code) {
				t.Errorf("code %v, want %s (%v)", e["code"], c.code, e["message"])
			}
			if !strings.Contains(fmt.Sprint(e["message"]), c.want) {
				t.Errorf("message %q does not mention %q", e["message"], c.want)
			}
			if c.name == "wrong field type" {
				det, _ := e["details"].(map[string]any)
				if det["frame_index"] != float64(1) || det["field"] != "value" {
					t.Errorf("details = %v, want frame_index 1, field value", det)
				}
			}
		})
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("heap grew by %d bytes over the hostile requests", grew)
	}
	if got := len(ts.frames(t, "")); got != 0 {
		t.Errorf("%d frames stored from refused batches", got)
	}
}

// dialTier1 opens the tier-1 WebSocket with the admin token.
func dialTier1(t *testing.T, ts *testServer, hdr http.Header) *websocket.Conn {
	t.Helper()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Authorization", "Bearer "+adminToken)
	url := "ws" + strings.TrimPrefix(ts.base, "http") + api("/tier1/stream")
	c, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type wsAck struct {
	OK        bool        `msgpack:"ok"`
	Accepted  int         `msgpack:"accepted"`
	BatchID   string      `msgpack:"batch_id"`
	Duplicate bool        `msgpack:"duplicate"`
	Error     *wire.Error `msgpack:"error"`
}

func readAck(t *testing.T, c *websocket.Conn) wsAck {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
	mt, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read ack: %v", err)
	}
	if mt != websocket.BinaryMessage {
		t.Fatalf("ack frame type %d, want binary", mt)
	}
	var a wsAck
	if err := wire.Msgpack.Unmarshal(b, &a); err != nil {
		t.Fatalf("ack is not msgpack: %v", err)
	}
	return a
}

func TestTier1WebSocket(t *testing.T) {
	ts := startTier1Server(t, func(c *tier1.Config) { c.MaxBatchBytes = 64 << 10 })
	c := dialTier1(t, ts, nil)
	now := time.Now().UnixNano()
	const n = 50
	// Pipelined: all batches go out before any answer is read.
	for i := range n {
		id := fmt.Sprintf("ws-%d", i)
		if i == 20 {
			id = "ws-0" // a repeat
		}
		if err := c.WriteMessage(websocket.BinaryMessage, telemetryBatch(id, "ws", i*10, 10, now)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.WriteMessage(websocket.TextMessage, []byte("not a batch"))
	_ = c.WriteMessage(websocket.BinaryMessage, []byte{0x93, 0xa1, 'x'})
	for i := range n {
		a := readAck(t, c)
		want := fmt.Sprintf("ws-%d", i)
		if i == 20 {
			want = "ws-0"
		}
		if !a.OK || a.BatchID != want || a.Accepted != 10 || a.Duplicate != (i == 20) {
			t.Fatalf("ack %d = %+v, want ok for %s (duplicate %v)", i, a, want, i == 20)
		}
	}
	if a := readAck(t, c); a.OK || a.Error == nil || a.Error.Code != wire.CodeMessageFormatInvalid {
		t.Errorf("text frame ack = %+v, want message_format_invalid", a)
	}
	if a := readAck(t, c); a.OK || a.Error == nil {
		t.Errorf("bad batch ack = %+v, want an error", a)
	}
	if got := len(ts.frames(t, "&device_id=ws")); got != (n-1)*10 {
		t.Errorf("stored %d frames, want %d", got, (n-1)*10)
	}
	t.Run("answers written together keep their lengths and order", func(t *testing.T) {
		// Ids of 125 bytes and more make answers with 2-byte frame lengths.
		c := dialTier1(t, ts, nil)
		var ids []string
		for i, l := range []int{1, 120, 130, 4000, 2, 3000, 5} {
			id := fmt.Sprintf("%d-%s", i, strings.Repeat("l", l))
			ids = append(ids, id)
			if err := c.WriteMessage(websocket.BinaryMessage, telemetryBatch(id, "len", i, 1, now)); err != nil {
				t.Fatal(err)
			}
		}
		for i, id := range ids {
			if a := readAck(t, c); !a.OK || a.BatchID != id || a.Accepted != 1 {
				t.Fatalf("ack %d = ok %v, batch_id of %d bytes, accepted %d; want ok for %d bytes", i, a.OK, len(a.BatchID), a.Accepted, len(id))
			}
		}
	})
	t.Run("a message over the limit closes with 1009", func(t *testing.T) {
		c := dialTier1(t, ts, nil)
		_ = c.WriteMessage(websocket.BinaryMessage, make([]byte, 65<<10))
		_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
		_, _, err := c.ReadMessage()
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Errorf("read after oversize message: %v, want close 1009", err)
		}
	})
	t.Run("a foreign Origin is refused", func(t *testing.T) {
		hdr := http.Header{}
		hdr.Set("Origin", "http://evil.example")
		hdr.Set("Authorization", "Bearer "+adminToken)
		url := "ws" + strings.TrimPrefix(ts.base, "http") + api("/tier1/stream")
		_, resp, err := websocket.DefaultDialer.Dial(url, hdr)
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("dial with foreign origin: err %v, resp %v; want 403", err, resp)
		}
	})
}

func TestTier1Retention(t *testing.T) {
	ts := startTier1Server(t, func(c *tier1.Config) { c.MaxBytesPerRoutine = 1500 })
	now := time.Now().UnixNano()
	for i := range 10 {
		r := ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch("", "r", i*20, 20, now), withMsgpack())
		r.wantStatus(t, http.StatusOK)
	}
	if _, err := ts.a.Prune(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := ts.frames(t, "")
	if len(got) == 0 || len(got) >= 200 {
		t.Fatalf("after size retention %d frames remain, want some but fewer than 200", len(got))
	}
	// The oldest went first: what remains is the newest, contiguous.
	if last := got[len(got)-1]["seq"].(float64); last != 199 {
		t.Errorf("newest remaining seq = %v, want 199", last)
	}
	if first := got[0]["seq"].(float64); first != float64(200-len(got)) {
		t.Errorf("oldest remaining seq = %v, want %d", first, 200-len(got))
	}
	m := ts.do(t, "GET", "/metrics", nil)
	want := fmt.Sprintf("synapse_tier1_retention_dropped_frames_total %d", 200-len(got))
	if !strings.Contains(string(m.body), want) {
		t.Errorf("metrics lack %q", want)
	}
}

// TestTier1StreamShutdown: on shutdown the stream answers every batch it
// has read before it closes (1001), so every stored batch was acknowledged.
func TestTier1StreamShutdown(t *testing.T) {
	ts := startServer(t)
	c := dialTier1(t, ts, nil)
	now := time.Now().UnixNano()
	const n = 300
	go func() {
		for i := range n {
			if c.WriteMessage(websocket.BinaryMessage, telemetryBatch(fmt.Sprintf("s-%d", i), "sd", i*10, 10, now)) != nil {
				return
			}
		}
	}()
	// Shut down once the first answers arrive, while batches are in flight.
	acked := 0
	if a := readAck(t, c); a.OK {
		acked++
	}
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ts.shutdown(ctx)
	}()
	var closeErr error
	for {
		_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
		_, b, err := c.ReadMessage()
		if err != nil {
			closeErr = err
			break
		}
		var a wsAck
		if err := wire.Msgpack.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		if a.OK {
			acked++
		}
	}
	if !websocket.IsCloseError(closeErr, websocket.CloseGoingAway) {
		t.Errorf("stream ended with %v, want close 1001", closeErr)
	}
	<-shut
	ts.restart()
	if got := len(ts.frames(t, "&device_id=sd")); got != acked*10 {
		t.Errorf("%d frames stored, %d acknowledged: a stored batch went unanswered", got, acked*10)
	}
}
