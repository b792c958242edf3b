package httptransport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
	"github.com/synapse-edge/synapse/wire"
)

type seen struct {
	method, path, query, body string
	header                    http.Header
}

// recorder is a real server on 127.0.0.1 that records what it got and
// answers with answer.
func recorder(t *testing.T, answer http.HandlerFunc) (*httptest.Server, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Clone()})
		mu.Unlock()
		if answer != nil {
			answer(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return append([]seen(nil), got...)
	}
}

func TestSendKinds(t *testing.T) {
	srv, got := recorder(t, nil)
	tr := httptransport.New(httptransport.Options{})
	defer tr.Close()
	ctx := context.Background()
	tests := []struct {
		m                  transport.Message
		method, path, body string
	}{
		{transport.Message{Kind: transport.Envelope, To: srv.URL + "/", Body: []byte(`{"e":1}`), ContentType: wire.ContentJSON,
			Header: map[string]string{transport.HeaderSeq: "7", transport.HeaderSeqPrev: "6"}}, "POST", httptransport.MessagePath, `{"e":1}`},
		{transport.Message{Kind: transport.Batch, To: srv.URL, Body: []byte{0x93}, ContentType: wire.ContentMsgpack,
			Header: map[string]string{transport.HeaderRoutine: "synapse.telemetry", transport.HeaderSourceAgent: "edge-1",
				transport.HeaderAuthorization: "Bearer tok"}}, "POST", httptransport.Tier1Path + "synapse.telemetry", "\x93"},
		{transport.Message{Kind: transport.Callback, To: srv.URL + "/hooks/a?x=1", Body: []byte(`{}`), ContentType: wire.ContentJSON,
			Header: map[string]string{transport.HeaderMessageID: "m-1", "User-Agent": "synapse-hil"}}, "POST", "/hooks/a", `{}`},
		{transport.Message{Kind: transport.Request, To: srv.URL + "/v1/chat/completions", Body: []byte(`{"q":1}`)}, "POST", "/v1/chat/completions", `{"q":1}`},
		{transport.Message{Kind: transport.Fetch, To: srv.URL + "/api/v1/synapse/identity", Body: []byte("ignored")}, "GET", "/api/v1/synapse/identity", ""},
		{transport.Message{Kind: transport.Envelopes, To: srv.URL + "/", Body: []byte(`{"messages":[]}`), ContentType: wire.ContentJSON},
			"POST", httptransport.BatchPath, `{"messages":[]}`},
	}
	for i, tt := range tests {
		t.Run(tt.m.Kind.String(), func(t *testing.T) {
			o := tr.Send(ctx, &tt.m)
			if !o.Delivered() || o.Status != 200 {
				t.Fatalf("outcome %v %d %v", o.Class, o.Status, o.Err)
			}
			s := got()[i]
			if s.method != tt.method || s.path != tt.path || s.body != tt.body {
				t.Errorf("got %s %s %q, want %s %s %q", s.method, s.path, s.body, tt.method, tt.path, tt.body)
			}
			for k, v := range tt.m.Header {
				want := v
				if k == transport.HeaderRoutine {
					want = ""
				}
				if g := s.header.Get(k); g != want {
					t.Errorf("header %s = %q, want %q", k, g, want)
				}
			}
			if tt.m.Header["User-Agent"] == "" && s.header.Get("User-Agent") != "synapse" {
				t.Errorf("User-Agent %q", s.header.Get("User-Agent"))
			}
			if ct := s.header.Get("Content-Type"); tt.m.ContentType != "" && ct != tt.m.ContentType {
				t.Errorf("Content-Type %q, want %q", ct, tt.m.ContentType)
			}
		})
	}
	if q := got()[2].query; q != "x=1" {
		t.Errorf("callback query %q", q)
	}
}

func tpBody(t *testing.T, codec wire.Codec, code wire.ErrorCode) []byte {
	t.Helper()
	b, err := codec.Marshal(wire.ErrorBody{Error: wire.Errorf(code, "")})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostileAnswers: whatever a destination answers, the outcome is a
// class, the read is bounded, and only a well-formed TPError counts.
func TestHostileAnswers(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	huge := strings.Repeat("x", 8<<20)
	tests := []struct {
		name    string
		kind    transport.Kind
		status  int
		ct      string
		body    string
		header  map[string]string
		want    transport.Class
		unreach bool
		code    wire.ErrorCode
		after   time.Duration
	}{
		{name: "html 502", status: 502, ct: "text/html", body: "<html><h1>502 Bad Gateway</h1>capability_lacking</html>", want: transport.Retry, unreach: true},
		{name: "tperror 400", status: 400, ct: wire.ContentJSON, body: string(tpBody(t, wire.JSON, wire.CodeInvalidParams)), want: transport.Permanent, code: wire.CodeInvalidParams},
		{name: "truncated tperror 400", status: 400, ct: wire.ContentJSON, body: string(tpBody(t, wire.JSON, wire.CodeInvalidParams))[:20], want: transport.Retry},
		{name: "code as text 403", status: 403, ct: "text/plain", body: "capability_lacking", want: transport.Retry},
		{name: "contract missing 428", status: 428, body: string(tpBody(t, wire.JSON, wire.CodeNegContractMissing)), want: transport.Negotiable, code: wire.CodeNegContractMissing},
		{name: "410 plain", status: 410, body: "gone", want: transport.Permanent},
		{name: "410 contract expired", status: 410, body: string(tpBody(t, wire.JSON, wire.CodeNegContractExpired)), want: transport.Negotiable, code: wire.CodeNegContractExpired},
		{name: "msgpack 429 seconds", status: 429, ct: wire.ContentMsgpack, body: string(tpBody(t, wire.Msgpack, wire.CodeRateLimited)),
			header: map[string]string{"Retry-After": "7"}, want: transport.Retry, code: wire.CodeRateLimited, after: 7 * time.Second},
		{name: "503 http date", status: 503, header: map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)},
			want: transport.Retry, unreach: true, after: 90 * time.Second},
		{name: "503 date in the past", status: 503, header: map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, want: transport.Retry, unreach: true},
		{name: "429 garbage retry-after", status: 429, header: map[string]string{"Retry-After": "soon"}, want: transport.Retry},
		{name: "429 negative", status: 429, header: map[string]string{"Retry-After": "-5"}, want: transport.Retry},
		{name: "429 a century", status: 429, header: map[string]string{"Retry-After": "99999999999999999999"}, want: transport.Retry},
		{name: "429 a year", status: 429, header: map[string]string{"Retry-After": "31536000"}, want: transport.Retry, after: transport.MaxRetryAfter},
		{name: "huge 500 with a code far in", status: 500, ct: wire.ContentJSON, body: `{"error":{"message":"` + huge + `","code":"invalid_params"}}`, want: transport.Retry},
		{name: "huge 400 tperror", status: 400, ct: wire.ContentJSON, body: `{"error":{"code":"invalid_params","message":"` + huge + `"}}`, want: transport.Retry},
		{name: "redirect not followed", status: 302, header: map[string]string{"Location": "/elsewhere"}, want: transport.Retry},
		{name: "webhook 400 tperror", kind: transport.Callback, status: 400, body: string(tpBody(t, wire.JSON, wire.CodeInvalidParams)), want: transport.Retry},
		{name: "batch 413", kind: transport.Batch, status: 413, body: "too big", want: transport.Permanent},
		{name: "batch 403 capability", kind: transport.Batch, status: 403, body: string(tpBody(t, wire.JSON, wire.CodeCapabilityLacking)), want: transport.Negotiable, code: wire.CodeCapabilityLacking},
		{name: "401 approval pending", status: 401, body: string(tpBody(t, wire.JSON, wire.CodePeerApprovalPending)), want: transport.Retry, unreach: true, code: wire.CodePeerApprovalPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := recorder(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					return
				}
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				if tt.ct != "" {
					w.Header().Set("Content-Type", tt.ct)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			})
			tr := httptransport.New(httptransport.Options{Now: func() time.Time { return now }})
			defer tr.Close()
			kind := tt.kind
			if kind == 0 {
				kind = transport.Envelope
			}
			m := &transport.Message{Kind: kind, To: srv.URL, Body: []byte("{}"),
				Header: map[string]string{transport.HeaderRoutine: "r"}}
			o := tr.Send(context.Background(), m)
			if o.Class != tt.want || o.Unreached != tt.unreach {
				t.Errorf("class %v unreached %v, want %v %v (%v)", o.Class, o.Unreached, tt.want, tt.unreach, o.Err)
			}
			var code wire.ErrorCode
			if o.Error != nil {
				code = o.Error.Code
			}
			if code != tt.code {
				t.Errorf("TPError %q, want %q", code, tt.code)
			}
			if o.RetryAfter != tt.after {
				t.Errorf("RetryAfter %v, want %v", o.RetryAfter, tt.after)
			}
			if o.Status != tt.status {
				t.Errorf("Status %d, want %d", o.Status, tt.status)
			}
			if len(o.Reply) > transport.DefaultMaxReply {
				t.Errorf("read %d bytes of the answer, bound %d", len(o.Reply), transport.DefaultMaxReply)
			}
			if !strings.Contains(o.Err.Error(), fmt.Sprint(tt.status)) {
				t.Errorf("Err %q does not name the status", o.Err)
			}
			if n := len(got()); n != 1 {
				t.Errorf("%d requests reached the server, want 1", n)
			}
		})
	}
}

func TestReply(t *testing.T) {
	big := strings.Repeat("y", 3<<20)
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(transport.HeaderOrdering, "per-sender")
		w.Header().Set("Content-Type", wire.ContentJSON)
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, big)
		case "/broken":
			// Promise more than is sent, then hang up.
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, `{"partial":`)
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		default:
			_, _ = io.WriteString(w, `{"ok":true}`)
		}
	})
	tr := httptransport.New(httptransport.Options{})
	defer tr.Close()
	ctx := context.Background()

	o := tr.Send(ctx, &transport.Message{Kind: transport.Fetch, To: srv.URL + "/doc"})
	if !o.Delivered() || string(o.Reply) != `{"ok":true}` || o.Truncated || o.ReplyType != wire.ContentJSON ||
		o.ReplyHeader[transport.HeaderOrdering] != "per-sender" {
		t.Errorf("reply %q truncated %v type %q header %v", o.Reply, o.Truncated, o.ReplyType, o.ReplyHeader)
	}
	o = tr.Send(ctx, &transport.Message{Kind: transport.Request, To: srv.URL + "/big", MaxReply: 1000})
	if !o.Delivered() || len(o.Reply) != 1000 || !o.Truncated {
		t.Errorf("big: %v, %d bytes, truncated %v", o.Class, len(o.Reply), o.Truncated)
	}
	o = tr.Send(ctx, &transport.Message{Kind: transport.Request, To: srv.URL + "/broken"})
	if !o.Delivered() || !o.Truncated {
		t.Errorf("broken: %v truncated %v reply %q", o.Class, o.Truncated, o.Reply)
	}
}

func TestUnreachable(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(block)

	tr := httptransport.New(httptransport.Options{})
	defer tr.Close()
	o := tr.Send(context.Background(), &transport.Message{Kind: transport.Envelope, To: closed})
	if o.Class != transport.Retry || !o.Unreached || !errors.Is(o.Err, transport.ErrNotDelivered) {
		t.Errorf("refused connection: %v unreached %v %v", o.Class, o.Unreached, o.Err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	o = tr.Send(ctx, &transport.Message{Kind: transport.Callback, To: slow.URL + "/hook?token=s3cr3t"})
	if o.Class != transport.Retry || !o.Unreached {
		t.Errorf("hanging webhook: %v unreached %v %v", o.Class, o.Unreached, o.Err)
	}
	if strings.Contains(o.Err.Error(), "s3cr3t") {
		t.Errorf("the error shows the URL: %v", o.Err)
	}

	// A dialer that refuses (the outbound policy).
	refuse := errors.New("outbound target refused: 127.0.0.1 is loopback")
	guarded := httptransport.New(httptransport.Options{Guard: func(context.Context, string, string) (net.Conn, error) { return nil, refuse }})
	o = guarded.Send(context.Background(), &transport.Message{Kind: transport.Callback, To: slow.URL})
	if o.Class != transport.Retry || !strings.Contains(o.Err.Error(), "loopback") {
		t.Errorf("callback refused by the guard: %v %v", o.Class, o.Err)
	}
	// Only callbacks go through the guard.
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer fast.Close()
	for _, k := range []transport.Kind{transport.Envelope, transport.Request, transport.Fetch} {
		if o := guarded.Send(context.Background(), &transport.Message{Kind: k, To: fast.URL}); !o.Delivered() {
			t.Errorf("%v through the guard: %v %v", k, o.Class, o.Err)
		}
	}
}

func TestBadMessages(t *testing.T) {
	tr := httptransport.New(httptransport.Options{})
	for _, m := range []transport.Message{
		{Kind: transport.Callback, To: "ftp://host/x"},
		{Kind: transport.Callback, To: "http:///nohost"},
		{Kind: transport.Callback, To: "http://[::1%zz/?token=s3cr3t"},
		{Kind: transport.Batch, To: "http://127.0.0.1:1"}, // no routine
		{Kind: 0, To: "http://127.0.0.1:1"},
	} {
		o := tr.Send(context.Background(), &m)
		if o.Class != transport.Permanent || strings.Contains(o.Err.Error(), "s3cr3t") {
			t.Errorf("%s (kind %d): %v %v", m.To, m.Kind, o.Class, o.Err)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"120", 2 * time.Minute}, {" 5 ", 5 * time.Second}, {"-1", 0}, {"1.5", 0}, {"abc", 0},
		{"3601", time.Hour}, {"9223372036854775807", time.Hour}, {"99999999999999999999", 0},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{"Sun, 06 Nov 1994 08:49:37 GMT", 0},
		{now.Add(48 * time.Hour).Format(time.RFC850), time.Hour},
	} {
		if got := httptransport.RetryAfter(tt.in, now); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzRetryAfter: any header value gives a wait within [0, MaxRetryAfter].
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "120", "-1", "99999999999999999999", now.Add(time.Minute).Format(http.TimeFormat), "Sun, 06 Nov 1994 08:49:37 GMT", "1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if d := httptransport.RetryAfter(v, now); d < 0 || d > transport.MaxRetryAfter {
			t.Fatalf("RetryAfter(%q) = %v", v, d)
		}
	})
}
