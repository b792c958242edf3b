package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/wire"
)

func TestConcurrencyLimit(t *testing.T) {
	ts := startServer(t, func(c *agent.Config) { c.MaxConcurrentTasks = 10 })
	const n = 11
	body := []byte(`{"task_type":"sleep","payload":{"ms":5000}}`)
	replies := make([]*reply, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i], errs[i] = ts.try("POST", api("/task"), body)
		}()
	}
	close(start)
	wg.Wait()

	var created []string
	var limited []*reply
	for i, r := range replies {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		switch r.status {
		case http.StatusCreated:
			created = append(created, r.object(t)["task_id"].(string))
		case http.StatusTooManyRequests:
			limited = append(limited, r)
		default:
			t.Errorf("request %d: status %d: %s", i, r.status, r.body)
		}
	}
	t.Cleanup(func() {
		for _, id := range created {
			ts.cancelTask(t, id)
		}
	})
	if len(created) != 10 || len(limited) != 1 {
		t.Fatalf("got %d created and %d limited, want 10 and 1", len(created), len(limited))
	}
	e := limited[0].wantError(t, http.StatusTooManyRequests, wire.CodeRateLimited)
	if d, _ := e["details"].(map[string]any); d["numeric_code"] != float64(wire.NumericTooManyTasks) {
		t.Errorf("details = %v, want numeric_code 4004", e["details"])
	}
	if e["retriable"] != true {
		t.Errorf("retriable = %v, want true", e["retriable"])
	}
	if ra := limited[0].header.Get("Retry-After"); ra == "" {
		t.Errorf("no Retry-After header")
	}
	if got := ts.listIDs(t, ""); len(got) != 10 {
		t.Errorf("GET /tasks lists %d tasks, want 10 (nothing stored for the refused one)", len(got))
	}
}

func TestHostileInput(t *testing.T) {
	ts := startServerLimits(t, func(l *httpapi.Limits) {
		l.MaxBodyBytes = 64 << 10
		l.MaxHeaderBytes = 8 << 10
	})
	// After each case the server must still answer.
	t.Cleanup(func() { ts.do(t, "GET", api("/health"), nil).wantStatus(t, http.StatusOK) })
	alive := func(t *testing.T) {
		t.Helper()
		ts.do(t, "GET", api("/health"), nil).wantStatus(t, http.StatusOK)
	}
	mpBody := withHeader("Content-Type", "application/msgpack")

	tests := []struct {
		name   string
		method string
		path   string
		body   []byte
		opts   []reqOpt
		status int
		code   wire.ErrorCode
		inMsg  string // a part of the message that makes it clear
	}{
		{name: "truncated JSON", body: []byte(`{"task_type":"echo","payload":{"a":`), status: 400, code: wire.CodeMessageFormatInvalid, inMsg: "JSON body ends early"},
		{name: "trailing data", body: []byte(`{"task_type":"echo"} {}`), status: 400, code: wire.CodeMessageFormatInvalid, inMsg: "trailing"},
		{name: "empty body", body: []byte{}, status: 400, code: wire.CodeMessageFormatInvalid, inMsg: "empty"},
		{name: "task_type a number", body: []byte(`{"task_type":5}`), status: 400, code: wire.CodeMessageFormatInvalid, inMsg: "task_type"},
		{name: "payload an array", body: []byte(`{"task_type":"echo","payload":[1]}`), status: 400, code: wire.CodeInvalidParams, inMsg: "payload"},
		{name: "payload a string", body: []byte(`{"task_type":"echo","payload":"x"}`), status: 400, code: wire.CodeInvalidParams, inMsg: "payload"},
		{name: "payload_json not JSON", body: []byte(`{"task_type":"echo","payload_json":"{x"}`), status: 400, code: wire.CodeInvalidParams, inMsg: "payload_json"},
		{name: "payload and payload_json", body: []byte(`{"task_type":"echo","payload":{},"payload_json":"{}"}`), status: 400, code: wire.CodeInvalidParams, inMsg: "payload_json"},
		{name: "no task_type", body: []byte(`{"payload":{}}`), status: 400, code: wire.CodeInvalidParams, inMsg: "task_type"},
		{name: "top level array", body: []byte(`[1,2]`), status: 400, code: wire.CodeMessageFormatInvalid},
		{name: "bad priority", body: []byte(`{"task_type":"echo","priority":"now"}`), status: 400, code: wire.CodeInvalidParams, inMsg: "priority"},
		{name: "negative ttl", body: []byte(`{"task_type":"echo","ttl_seconds":-1}`), status: 400, code: wire.CodeInvalidParams, inMsg: "ttl_seconds"},
		{name: "unknown task type", body: []byte(`{"task_type":"launch","payload":{}}`), status: 403, code: wire.CodeCapabilityLacking, inMsg: "launch"},
		{name: "schema violation", body: []byte(`{"task_type":"sleep","payload":{"ms":"soon"}}`), status: 400, code: wire.CodeValSchema, inMsg: "ms"},
		{name: "text/plain", body: []byte(`{"task_type":"echo"}`), opts: []reqOpt{withHeader("Content-Type", "text/plain")}, status: 415, code: wire.CodeUnsupportedMedia, inMsg: "text/plain"},
		{name: "msgpack not a map", body: []byte{0x93, 1, 2, 3}, opts: []reqOpt{mpBody}, status: 400, code: wire.CodeMessageFormatInvalid},
		{name: "msgpack truncated", body: []byte{0x82, 0xa9, 't', 'a'}, opts: []reqOpt{mpBody}, status: 400, code: wire.CodeMessageFormatInvalid, inMsg: "truncated"},
		{name: "msgpack integer key", body: []byte{0x81, 0x01, 0x02}, opts: []reqOpt{mpBody}, status: 400, code: wire.CodeMessageFormatInvalid},
		{name: "msgpack never-used byte", body: []byte{0x81, 0xa1, 'a', 0xc1}, opts: []reqOpt{mpBody}, status: 400, code: wire.CodeMessageFormatInvalid},
		{name: "msgpack nested 1000 deep", body: deepMsgpack(1000), opts: []reqOpt{mpBody}, status: 400, code: wire.CodeMessageFormatInvalid, inMsg: "deep"},
		{name: "unknown route", method: "GET", path: api("/nope"), status: 404, code: wire.CodeNotFound, inMsg: "/nope"},
		{name: "route outside the prefix", method: "GET", path: "/nope", status: 404, code: wire.CodeNotFound},
		{name: "wrong method", method: "DELETE", path: api("/task"), status: 405, code: wire.CodeMethodNotAllowed, inMsg: "DELETE"},
		{name: "GET a POST route", method: "GET", path: api("/task/abc/cancel"), status: 405, code: wire.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, path := tt.method, tt.path
			if method == "" {
				method, path = "POST", api("/task")
			}
			r := ts.do(t, method, path, tt.body, tt.opts...)
			e := r.wantError(t, tt.status, tt.code)
			if msg, _ := e["message"].(string); !strings.Contains(msg, tt.inMsg) {
				t.Errorf("message %q does not mention %q", msg, tt.inMsg)
			}
			alive(t)
		})
	}
	if got := ts.listIDs(t, ""); len(got) != 0 {
		t.Errorf("hostile requests stored tasks: %v", got)
	}

	t.Run("msgpack array32 of 2^32-1", func(t *testing.T) {
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		before := heap()
		for _, b := range [][]byte{
			{0xdd, 0xff, 0xff, 0xff, 0xff},
			// {"task_type":"echo","payload":[2^32-1 elements...]}
			append([]byte{0x82, 0xa9, 't', 'a', 's', 'k', '_', 't', 'y', 'p', 'e', 0xa4, 'e', 'c', 'h', 'o',
				0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd'}, 0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0),
			{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'a'},
			{0x81, 0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd', 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'},
		} {
			t0 := time.Now()
			r := ts.do(t, "POST", api("/task"), b, mpBody)
			if took := time.Since(t0); took > 500*time.Millisecond {
				t.Errorf("% x took %s, want well under a second", b, took)
			}
			r.wantError(t, http.StatusBadRequest, wire.CodeMessageFormatInvalid)
		}
		after := heap()
		if after > before && after-before > 16<<20 {
			t.Errorf("heap grew by %d MiB, want < 16 MiB", (after-before)>>20)
		}
		alive(t)
	})

	t.Run("header over max_header_bytes", func(t *testing.T) {
		// On a connection of its own: a client library that sees its
		// write broken by the agent's close may report that and not the
		// answer already sent (net/http does, now and then).
		r := rawRequest(t, ts, "GET "+api("/health")+" HTTP/1.1\r\nHost: "+strings.TrimPrefix(ts.base, "http://")+
			"\r\nX-Big: "+strings.Repeat("a", 16<<10)+"\r\n\r\n")
		r.wantError(t, http.StatusRequestHeaderFieldsTooLarge, wire.CodeMessageFormatInvalid)
		alive(t)
	})

	t.Run("garbage on the socket", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.base, "http://"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprint(c, "NOT HTTP AT ALL\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no HTTP answer to garbage: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode > 499 {
			t.Errorf("status = %d, want a 4xx", resp.StatusCode)
		}
		alive(t)
	})
}

// deepMsgpack is {"task_type":"echo","payload":{"a":[[[...nil...]]]}} with
// depth nested arrays.
func deepMsgpack(depth int) []byte {
	b := []byte{0x82, 0xa9, 't', 'a', 's', 'k', '_', 't', 'y', 'p', 'e', 0xa4, 'e', 'c', 'h', 'o',
		0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd', 0x81, 0xa1, 'a'}
	b = append(b, bytes.Repeat([]byte{0x91}, depth)...)
	return append(b, 0xc0)
}

// TestBodyOverLimit declares a body larger than max_body_bytes and sends
// one byte of it: the agent answers 413 without reading the rest. (Sending
// the whole body from a client races the agent closing the connection,
// which can reset it before the client reads the answer.)
func TestBodyOverLimit(t *testing.T) {
	ts := startServer(t)
	req := "POST " + api("/task") + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(ts.base, "http://") +
		"\r\nAuthorization: Bearer " + adminToken + "\r\nContent-Type: application/json\r\nContent-Length: " +
		fmt.Sprint(ts.limits.MaxBodyBytes+1) + "\r\n\r\n{"
	r := rawRequest(t, ts, req)
	if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.body), string(wire.CodePayloadTooLarge)) {
		t.Errorf("answer %d %s, want 413 %s", r.status, r.body, wire.CodePayloadTooLarge)
	}
}

// TestBodyOverLimitFromHeaders: a request whose Content-Length is over
// its route's limit, sent as headers alone (a client waiting for an
// answer before it sends the body), is answered from the headers: 413, or
// 401 without a token, long before the read timeout (2 minutes here;
// rawRequest gives up after pollTimeout) — it was held for the read
// timeout and answered 408.
func TestBodyOverLimitFromHeaders(t *testing.T) {
	ts := startServerLimits(t, func(l *httpapi.Limits) { l.ReadTimeoutSeconds = 120 })
	host := strings.TrimPrefix(ts.base, "http://")
	for _, tc := range []struct {
		name, path, token string
		length            int64
		status            int
		code              wire.ErrorCode
	}{
		{"50 GiB task", api("/task"), adminToken, 50 << 30, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge},
		{"task one byte over", api("/task"), adminToken, int64(ts.limits.MaxBodyBytes) + 1, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge},
		{"tier-1 batch over its limit", api("/tier1/synapse.telemetry"), adminToken, int64(ts.t1.Config().MaxBatchBytes) + 1, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge},
		{"public route", api("/message"), "", 50 << 30, http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge},
		{"no token", api("/task"), "", 50 << 30, http.StatusUnauthorized, wire.CodeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := "POST " + tc.path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
			if tc.token != "" {
				req += "Authorization: Bearer " + tc.token + "\r\n"
			}
			req += "Content-Length: " + fmt.Sprint(tc.length) + "\r\n\r\n"
			if uint64(tc.length) > math.MaxInt {
				// A 32-bit build cannot read the length: it is over
				// every limit, so 413 before the token is read.
				tc.status, tc.code = http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge
			}
			r := rawRequest(t, ts, req)
			if r.status != tc.status || !strings.Contains(string(r.body), string(tc.code)) {
				t.Errorf("answer %d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
}

// rawRequest writes req on a connection of its own and reads the answer.
// An error of the write is not fatal: the agent may answer an over-limit
// request and close before reading all of it, and the close can break the
// rest of the write while the answer is already on its way.
func rawRequest(t *testing.T, ts *testServer, req string) *reply {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(ts.base, "http://"), pollTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(pollTimeout))
	_, _ = c.Write([]byte(req))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read answer body: %v", err)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: body}
}
