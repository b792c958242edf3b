package e2e_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// hangingServer accepts connections and never answers; it counts them.
type hangingServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startHanging(t *testing.T) *hangingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			c.Close()
		}
	})
	return h
}

func (h *hangingServer) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// TestHangingWebhooksDoNotDelayOthers: 40 callback_urls that accept the
// connection and never answer must not delay a live webhook, nor the
// messages to a peer (issue #15 item 8). Before per-round delivery slots,
// the 16 shared slots stayed taken for the 30 s delivery timeout and the
// live webhook waited about that long.
func TestHangingWebhooksDoNotDelayOthers(t *testing.T) {
	const hanging = 40
	const bound = 8 * time.Second // far below the 30 s delivery timeout
	hang := startHanging(t)
	arrived := make(chan string, 4)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- r.URL.Path:
		default:
		}
	}))
	defer live.Close()

	env := []string{"SYNAPSE_OUTBOUND_ALLOW=127.0.0.0/8"}
	a := startAgent(t, agentOpts{env: env})
	b := startAgent(t, agentOpts{env: env})
	bID, _ := identityOf(t, b)
	for _, x := range [][2]*agentProc{{a, b}, {b, a}} {
		if r := x[0].call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+x[1].url()+`"}`)); r.status != http.StatusCreated {
			t.Fatalf("POST /agents %s: %s", x[1].url(), r)
		}
	}

	hangURL := "http://" + hang.ln.Addr().String()
	for i := range hanging {
		a.submit(http.StatusCreated, `{"task_type":"echo","payload":{},"callback_url":"`+hangURL+`/h/`+strconv.Itoa(i)+`"}`)
	}
	// Every shared slot of the old outbox is taken by now.
	testutil.Eventually(t, 20*time.Second, "16 hanging deliveries", func() bool { return hang.accepted() >= 16 })

	start := time.Now()
	a.submit(http.StatusCreated, `{"task_type":"echo","payload":{},"callback_url":"`+live.URL+`/live"}`)
	select {
	case p := <-arrived:
		if p != "/live" {
			t.Errorf("live webhook called at %s", p)
		}
		t.Logf("live webhook delivered %v after submit, %d hanging connections", time.Since(start).Round(time.Millisecond), hang.accepted())
	case <-time.After(bound):
		t.Fatalf("the live webhook was not called within %v while %d callback_urls hang (%d connections held)", bound, hanging, hang.accepted())
	}

	start = time.Now()
	r := a.call(http.MethodPost, prefix+"/task?wait=30", []byte(`{"task_type":"echo","payload":{"x":1},"target":"`+bID+`"}`))
	if took := time.Since(start); r.status != http.StatusOK || took > bound {
		t.Fatalf("delegation while webhooks hang: %s after %v, want 200 within %v", r, took.Round(time.Millisecond), bound)
	}
	t.Logf("delegation took %v", time.Since(start).Round(time.Millisecond))
}
