package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/wire"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id    uint64
	event string
	data  map[string]any
}

func (e sseEvent) String() string { return fmt.Sprintf("%d:%s(%v)", e.id, e.event, e.data["status"]) }

// sseReader parses an event stream as a plain HTTP client sees it.
type sseReader struct {
	br *bufio.Reader
}

// next returns the next event; io.EOF when the server closed the stream.
func (r *sseReader) next() (sseEvent, error) {
	var e sseEvent
	var fields int
	for lines := 0; lines < 1000; lines++ {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && fields == 0 {
				return e, io.EOF
			}
			return e, fmt.Errorf("stream ended inside an event (%q): %w", line, err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if fields == 0 {
				continue
			}
			return e, nil
		case strings.HasPrefix(line, ":"):
			continue // comment (keep-alive)
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		fields++
		switch name {
		case "id":
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return e, fmt.Errorf("bad id line %q", line)
			}
			e.id = n
		case "event":
			e.event = value
		case "data":
			if err := json.Unmarshal([]byte(value), &e.data); err != nil {
				return e, fmt.Errorf("data is not a JSON object: %q", value)
			}
		default:
			return e, fmt.Errorf("unexpected field line %q", line)
		}
	}
	return e, fmt.Errorf("event longer than 1000 lines")
}

// openStream opens GET /task/{id}/stream; lastEventID "" sends no header.
func (ts *testServer) openStream(t *testing.T, id, lastEventID string) (*sseReader, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", ts.base+api("/task/"+id+"/stream"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream status = %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q, want text/event-stream", ct)
	}
	return &sseReader{br: bufio.NewReader(resp.Body)}, resp
}

// readAll reads events until the server closes the stream.
func readAll(t *testing.T, r *sseReader) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for i := 0; i < 10000; i++ {
		e, err := r.next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("after %v: %v", evs, err)
		}
		evs = append(evs, e)
	}
	t.Fatalf("stream did not end after 10000 events")
	return nil
}

// sleepEvents is the event sequence of a sleep task that completes.
var sleepEvents = []string{
	"1:status_update(pending)", "2:status_update(confirmed)", "3:status_update(executing)",
	"4:status_update(completed)", "5:complete(completed)",
}

func describe(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.String()
	}
	return out
}

func TestStream(t *testing.T) {
	ts := startServer(t)

	t.Run("live task", func(t *testing.T) {
		id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":300}}`)
		r, _ := ts.openStream(t, id, "")
		evs := readAll(t, r)
		if got := describe(evs); !slices.Equal(got, sleepEvents) {
			t.Fatalf("events = %v, want %v", got, sleepEvents)
		}
		for _, e := range evs {
			if e.data["task_id"] != id {
				t.Errorf("event %d task_id = %v, want %s", e.id, e.data["task_id"], id)
			}
		}
		if res, _ := evs[4].data["result_json"].(string); !jsonEqual(t, res, `{"slept_ms":300}`) {
			t.Errorf("complete event result_json = %q", res)
		}
	})

	t.Run("resume with Last-Event-ID", func(t *testing.T) {
		id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":500}}`)
		r, resp := ts.openStream(t, id, "")
		var first []sseEvent
		for len(first) < 2 {
			e, err := r.next()
			if err != nil {
				t.Fatalf("first stream: %v", err)
			}
			first = append(first, e)
		}
		resp.Body.Close()
		r2, _ := ts.openStream(t, id, "2")
		rest := readAll(t, r2)
		if len(rest) == 0 || rest[0].id != 3 {
			t.Fatalf("resumed stream starts with %v, want id 3", describe(rest))
		}
		if got := describe(append(first, rest...)); !slices.Equal(got, sleepEvents) {
			t.Errorf("events across the two streams = %v, want %v", got, sleepEvents)
		}
	})

	t.Run("finished task replays and closes", func(t *testing.T) {
		r := ts.do(t, "POST", api("/task?wait=5"), []byte(`{"task_type":"sleep","payload":{"ms":1}}`))
		r.wantStatus(t, http.StatusOK)
		id := r.object(t)["task_id"].(string)
		sr, _ := ts.openStream(t, id, "")
		if got := describe(readAll(t, sr)); !slices.Equal(got, sleepEvents) {
			t.Errorf("events = %v, want %v", got, sleepEvents)
		}
		sr, _ = ts.openStream(t, id, "4")
		if got := describe(readAll(t, sr)); !slices.Equal(got, sleepEvents[4:]) {
			t.Errorf("events after 4 = %v, want %v", got, sleepEvents[4:])
		}
		// Reconnecting after the last event: 204, so that an EventSource
		// stops (WHATWG HTML §9.2), with Last-Event-ID or the query.
		for _, opt := range []reqOpt{withHeader("Last-Event-ID", "5"), withHeader("Last-Event-ID", "9")} {
			r := ts.do(t, "GET", api("/task/"+id+"/stream"), nil, opt)
			if r.status != http.StatusNoContent || len(r.body) != 0 {
				t.Errorf("reconnect after the last event = %d %q, want 204 and no body", r.status, r.body)
			}
		}
		if r := ts.do(t, "GET", api("/task/"+id+"/stream?last_event_id=5"), nil); r.status != http.StatusNoContent {
			t.Errorf("?last_event_id=5 = %d, want 204", r.status)
		}
	})

	t.Run("cancelled task", func(t *testing.T) {
		id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":60000}}`)
		r, _ := ts.openStream(t, id, "")
		ts.waitStatus(t, id, wire.StatusExecuting)
		ts.cancelTask(t, id)
		got := describe(readAll(t, r))
		want := []string{"1:status_update(pending)", "2:status_update(confirmed)", "3:status_update(executing)",
			"4:status_update(cancelled)", "5:complete(cancelled)"}
		if !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
	})

	t.Run("unknown task", func(t *testing.T) {
		ts.do(t, "GET", api("/task/nope/stream"), nil).wantError(t, http.StatusNotFound, wire.CodeTaskNotFound)
	})

	t.Run("bad Last-Event-ID", func(t *testing.T) {
		id := ts.submit(t, `{"task_type":"echo","payload":{}}`)
		ts.do(t, "GET", api("/task/"+id+"/stream"), nil, withHeader("Last-Event-ID", "x")).
			wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
	})
}

func TestShutdownEndsStreams(t *testing.T) {
	ts := startServer(t)
	id := ts.submit(t, `{"task_type":"sleep","payload":{"ms":60000}}`)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := ts.a.Cancel(ctx, id); err != nil {
			t.Errorf("cancel: %v", err)
		}
	})
	r, _ := ts.openStream(t, id, "")
	if _, err := r.next(); err != nil {
		t.Fatalf("first event: %v", err)
	}

	const limit = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(ctx) }()

	var evs []sseEvent
	for i := 0; ; i++ {
		e, err := r.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream ended with %v after %v, want EOF", err, describe(evs))
		}
		if i > 10 {
			t.Fatalf("stream goes on after Shutdown: %v", describe(evs))
		}
		evs = append(evs, e)
	}
	for _, e := range evs {
		if e.event == "complete" {
			t.Errorf("stream sent %v; the task is still running", e)
		}
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v, want nil", err)
	}
	if took := time.Since(start); took >= limit {
		t.Errorf("Shutdown took %s, want under its %s context", took, limit)
	}
	select {
	case <-ts.served:
		if ts.serveErr != nil {
			t.Errorf("Serve = %v, want nil", ts.serveErr)
		}
	case <-time.After(limit):
		t.Errorf("Serve did not return after Shutdown")
	}
	if _, err := ts.try("GET", api("/health"), nil); err == nil {
		t.Errorf("server still answers after Shutdown")
	}
}

// TestShutdownBeforeServe: a Shutdown that comes before Serve has started
// (or while it starts) still ends it; fasthttp alone would keep serving a
// listener it had not seen yet.
func TestShutdownBeforeServe(t *testing.T) {
	ts := startServer(t)
	for i := range 20 {
		srv := httpapi.New(ts.a, httpapi.Options{Version: "test", Network: ts.net, Tier1: ts.t1})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		shut := make(chan error, 1)
		if i%2 == 0 { // Shutdown first, then Serve
			shut <- srv.Shutdown(context.Background())
			go func() { served <- srv.Serve(ln) }()
		} else { // both at once
			go func() { served <- srv.Serve(ln) }()
			go func() { shut <- srv.Shutdown(context.Background()) }()
		}
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("round %d: Serve = %v, want nil", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Serve still running 10 s after Shutdown", i)
		}
		if err := <-shut; err != nil {
			t.Errorf("round %d: Shutdown = %v", i, err)
		}
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Errorf("round %d: the listener still accepts after Shutdown", i)
		}
	}
}
