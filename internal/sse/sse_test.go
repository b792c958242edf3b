package sse_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/wire"
)

func TestResume(t *testing.T) {
	for _, c := range []struct {
		name, header, query string
		fromQuery           bool
		last                uint64
		ok                  bool
		code                wire.ErrorCode
	}{
		{name: "none"},
		{name: "header", header: " 42 ", last: 42, ok: true},
		{name: "query ignored", query: "7"},
		{name: "query", query: "7", fromQuery: true, last: 7, ok: true},
		{name: "header first", header: "3", query: "7", fromQuery: true, last: 3, ok: true},
		{name: "not a number", header: "x1", code: wire.CodeInvalidParams},
		{name: "negative", query: "-1", fromQuery: true, code: wire.CodeInvalidParams},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/x?last_event_id=" + c.query)
			if c.header != "" {
				ctx.Request.Header.Set("Last-Event-ID", c.header)
			}
			last, ok, err := sse.Resume(&ctx, c.fromQuery)
			if c.code != "" {
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != c.code {
					t.Fatalf("err = %v, want %s", err, c.code)
				}
				return
			}
			if err != nil || last != c.last || ok != c.ok {
				t.Errorf("Resume = %d, %v, %v; want %d, %v", last, ok, err, c.last, c.ok)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	got := sse.Header(fasthttp.StatusOK, "text/event-stream", "Cache-Control: no-cache")
	want := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nServer: synapse\r\nConnection: close\r\nCache-Control: no-cache\r\n\r\n"
	if got != want {
		t.Errorf("Header = %q, want %q", got, want)
	}
}

// Follow writes what comes, keeps going until emit ends the stream, and
// tells a closed source that lagged from one that ended.
func TestFollow(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	read := make(chan string, 1)
	go func() {
		var sb strings.Builder
		buf := make([]byte, 256)
		for {
			n, err := b.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		read <- sb.String()
	}()
	w := sse.NewWriter(a)
	c := make(chan int, 2)
	c <- 1
	c <- 2
	lagged, err := sse.Follow(w, nil, c, func() bool { return true }, func(n int) (bool, error) {
		_, err := w.WriteString("data: " + string(rune('0'+n)) + "\n\n")
		return n == 2, err
	})
	if lagged || err != nil {
		t.Fatalf("Follow = %v, %v; want the end emit said", lagged, err)
	}
	close(c)
	if lagged, err = sse.Follow(w, nil, c, func() bool { return true }, nil); !lagged || err != nil {
		t.Fatalf("Follow on a closed source = %v, %v; want lagged", lagged, err)
	}
	done := make(chan struct{})
	close(done)
	if lagged, err = sse.Follow(w, done, make(chan int), func() bool { return true }, nil); lagged || err != nil {
		t.Fatalf("Follow after done = %v, %v; want false, nil", lagged, err)
	}
	a.Close()
	select {
	case got := <-read:
		if got != "data: 1\n\ndata: 2\n\n" {
			t.Errorf("written %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader did not end")
	}
}

// TestAppendEvent: the fields of one event, and data split into lines at
// LF, CRLF and CR, so that a newline in data neither ends the event nor
// starts a field.
func TestAppendEvent(t *testing.T) {
	for _, c := range []struct {
		id, name, data, want string
	}{
		{"7", "status", `{"a":1}`, "id: 7\nevent: status\ndata: {\"a\":1}\n\n"},
		{"", "reset", `{}`, "event: reset\ndata: {}\n\n"},
		{"3", "", `{"jsonrpc":"2.0"}`, "id: 3\ndata: {\"jsonrpc\":\"2.0\"}\n\n"},
		{"", "", "", "data: \n\n"},
		{"1", "message", "{\n\"a\": 1\r\n}", "id: 1\nevent: message\ndata: {\ndata: \"a\": 1\ndata: }\n\n"},
		{"", "", "a\rb\n\nid: 9\n", "data: a\ndata: b\ndata: \ndata: id: 9\ndata: \n\n"},
	} {
		if got := string(sse.AppendEvent([]byte("x"), c.id, c.name, []byte(c.data))); got != "x"+c.want {
			t.Errorf("AppendEvent(%q, %q, %q) = %q, want %q", c.id, c.name, c.data, got, "x"+c.want)
		}
	}
}
