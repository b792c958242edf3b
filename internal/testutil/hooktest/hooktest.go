// Package hooktest is a webhook for tests: a plain HTTP server on a
// loopback port (not an agent) that records the calls it receives, for
// the tests of callbacks and push notifications.
//
//	h := hooktest.New(t, func(n int) int { return http.StatusOK })
//	... callback_url: h.URL ...
//	calls := h.Calls()
package hooktest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Hook records the calls of its server; it is closed when the test ends.
type Hook struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL    string
	mu     sync.Mutex
	got    []Call
	answer func(n int) int
}

// Call is one request the hook received.
type Call struct {
	Header http.Header
	Body   []byte
	// Status is what the hook answered.
	Status int
}

// New starts a hook; answer picks the status of call n (from 0).
func New(t testing.TB, answer func(n int) int) *Hook {
	t.Helper()
	h := &Hook{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		status := h.answer(len(h.got))
		h.got = append(h.got, Call{Header: r.Header.Clone(), Body: body, Status: status})
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}

// Calls returns the calls received so far, in order.
func (h *Hook) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call(nil), h.got...)
}
