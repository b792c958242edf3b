package a2asdk_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// webhook records the push notifications it receives.
type webhook struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []received
	fail int // answer 503 to the first fail calls
}

type received struct {
	header http.Header
	event  a2a.Event
	raw    string
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var sr a2a.StreamResponse
		err := json.Unmarshal(b, &sr)
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			t.Errorf("webhook: body %s is no StreamResponse: %v", b, err)
		}
		w.got = append(w.got, received{header: r.Header.Clone(), event: sr.Event, raw: string(b)})
		if w.fail > 0 {
			w.fail--
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) calls() []received {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]received(nil), w.got...)
}

// finalState is the state of the last status the webhook received.
func finalState(calls []received) a2a.TaskState {
	var st a2a.TaskState
	for _, c := range calls {
		switch e := c.event.(type) {
		case *a2a.TaskStatusUpdateEvent:
			st = e.Status.State
		case *a2a.Task:
			st = e.Status.State
		}
	}
	return st
}

// A push config given with the message: every notification up to the
// final status reaches the webhook as an A2A StreamResponse, with the
// config's token and its authentication as the Authorization header; the
// result artifact comes before the final status.
func TestGoSDKPush(t *testing.T) {
	for _, tg := range []*target{startSynapse(t, ""), startRef(t), startJS(t)} {
		t.Run(tg.name, func(t *testing.T) {
			c, ctx := tg.client(t)
			w := newWebhook(t)
			req := message("sleep", a2a.NewDataPart(map[string]any{"ms": 50}))
			req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: w.srv.URL + "/hook", Token: "tok",
				Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "cred"}}}
			tk := send(t, c, ctx, req)
			testutil.Eventually(t, 20*time.Second, "the final status at the webhook", func() bool { return finalState(w.calls()).Terminal() })
			calls := w.calls()
			if st := finalState(calls); st != a2a.TaskStateCompleted {
				t.Errorf("final state pushed = %s, want completed", st)
			}
			artifact := -1
			for i, c := range calls {
				if tok := c.header.Get("X-A2A-Notification-Token") + c.header.Get("A2A-Notification-Token"); !strings.Contains(tok, "tok") && !tg.differs(t, "token header") {
					t.Errorf("notification %d: no token header in %v", i, c.header)
				}
				if got := c.header.Get("Authorization"); got != "Bearer cred" {
					t.Errorf("notification %d: Authorization %q, want Bearer cred", i, got)
				}
				if ct := c.header.Get("Content-Type"); ct != "application/json" && ct != "application/a2a+json" {
					t.Errorf("notification %d: Content-Type %q", i, ct)
				}
				if tg.name == "synapse" && (c.header.Get("Content-Type") != "application/a2a+json" || c.header.Get("X-A2A-Notification-Token") != "tok") {
					t.Errorf("notification %d: Content-Type %q, X-A2A-Notification-Token %q; want application/a2a+json, tok",
						i, c.header.Get("Content-Type"), c.header.Get("X-A2A-Notification-Token"))
				}
				if a, ok := c.event.(*a2a.TaskArtifactUpdateEvent); ok {
					artifact = i
					if a.TaskID != tk.ID || a.Artifact.Parts[0].Data().(map[string]any)["slept_ms"] != float64(50) {
						t.Errorf("artifact notification %s", c.raw)
					}
				}
			}
			if artifact < 0 || artifact > len(calls)-2 {
				t.Errorf("artifact at %d of %d notifications, want one before the final status", artifact, len(calls))
			}
		})
	}
}

// A webhook that refuses at first still gets every notification, in order:
// they wait in the agent's durable outbox and are retried.
func TestGoSDKPushRetried(t *testing.T) {
	tg := startSynapse(t, `{"p2p": {"retry_base_delay_ms": 20, "max_retries": 20}}`)
	c, ctx := tg.client(t)
	w := newWebhook(t)
	w.fail = 3
	req := message("", a2a.NewTextPart("hi"))
	req.Config = &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: w.srv.URL, Token: "tok"}}
	tk := send(t, c, ctx, req)
	testutil.Eventually(t, 20*time.Second, "the final status at the webhook", func() bool { return finalState(w.calls()).Terminal() })
	var kinds []string
	for _, c := range w.calls()[3:] {
		switch e := c.event.(type) {
		case *a2a.Task:
			kinds = append(kinds, "task:"+string(e.Status.State))
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status:"+string(e.Status.State))
		case *a2a.TaskArtifactUpdateEvent:
			kinds = append(kinds, "artifact")
		}
		if id := c.event.TaskInfo().TaskID; id != tk.ID {
			t.Errorf("notification for task %s, want %s", id, tk.ID)
		}
	}
	want := "[task:TASK_STATE_SUBMITTED status:TASK_STATE_WORKING artifact status:TASK_STATE_COMPLETED]"
	if got := strings.Join(kinds, " "); "["+got+"]" != want {
		t.Errorf("delivered after the refusals: [%s], want %s", got, want)
	}
}
