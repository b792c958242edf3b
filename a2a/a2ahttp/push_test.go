package a2ahttp_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/hooktest"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/peer"
)

// A push notification config created over A2A is delivered through the
// durable outbox: the webhook is down when the task finishes, the agent is
// restarted, and the notification arrives once the webhook is up.
func TestA2APushAfterRestart(t *testing.T) {
	p2p := peer.DefaultConfig()
	p2p.RetryBaseDelayMS, p2p.MaxRetries = 20, 30
	ts := startServerNode(t, peernode.Options{Config: []func(*agent.Config){allowLoopback}, Peer: peer.Options{Config: &p2p}})
	// A loopback address with nothing listening yet.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	hookURL := "http://" + addr + "/a2a-push"

	var res struct{ Task a2aTask }
	ts.ok(t, "SendMessage", map[string]any{"message": msg(false, "sleep", data(map[string]any{"ms": 200})),
		"configuration": map[string]any{"returnImmediately": true}}, &res)
	id := res.Task.ID

	t.Run("create, get, list", func(t *testing.T) {
		var created struct{ TaskID, ID, URL, Token string }
		ts.ok(t, "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1", "url": hookURL, "token": "tok-1"}, &created)
		if created.TaskID != id || created.ID != "c1" || created.URL != hookURL || created.Token != "tok-1" {
			t.Errorf("created = %+v", created)
		}
		var got struct{ ID, URL string }
		ts.ok(t, "GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}, &got)
		if got.ID != "c1" || got.URL != hookURL {
			t.Errorf("get = %+v", got)
		}
		var v03 []struct {
			TaskID string                   `json:"taskId"`
			Push   struct{ ID, URL string } `json:"pushNotificationConfig"`
		}
		ts.ok(t, "tasks/pushNotificationConfig/list", map[string]any{"id": id}, &v03)
		if len(v03) != 1 || v03[0].Push.ID != "c1" || v03[0].TaskID != id {
			t.Errorf("v0.3 list = %+v", v03)
		}
		ts.wantRPCError(t, "GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "nope"}, -32602)
	})

	testutil.Eventually(t, pollTimeout, "the task completed", func() bool {
		var tk a2aTask
		ts.ok(t, "GetTask", map[string]any{"id": id}, &tk)
		return tk.Status.State == "TASK_STATE_COMPLETED"
	})
	testutil.Eventually(t, pollTimeout, "a failed delivery attempt", func() bool {
		return strings.Contains(string(ts.do(t, "GET", api("/outbox"), nil).body), `"attempts":`)
	})

	ts.restart()

	var mu sync.Mutex
	var bodies [][]byte
	var headers []http.Header
	hl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the webhook port was taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		bodies = append(bodies, b)
		headers = append(headers, r.Header.Clone())
		mu.Unlock()
	})}
	go func() { _ = srv.Serve(hl) }()
	t.Cleanup(func() { _ = srv.Close() })

	// The last two notifications are the result artifact, then the final
	// status (a working status may come first, as the config may have come
	// before the task started), each with the config's token.
	testutil.Eventually(t, pollTimeout, "the push notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) >= 2 && strings.Contains(string(bodies[len(bodies)-1]), "TASK_STATE_COMPLETED")
	})
	mu.Lock()
	got, hdrs := bodies[len(bodies)-2:], headers[len(headers)-2:]
	mu.Unlock()
	var art struct {
		ArtifactUpdate *struct {
			TaskID   string `json:"taskId"`
			Artifact struct {
				Parts []a2aPart `json:"parts"`
			} `json:"artifact"`
		} `json:"artifactUpdate"`
	}
	if err := json.Unmarshal(got[0], &art); err != nil || art.ArtifactUpdate == nil || art.ArtifactUpdate.TaskID != id ||
		!jsonEqual(t, string(art.ArtifactUpdate.Artifact.Parts[0].Data), `{"slept_ms":200}`) {
		t.Errorf("first notification %s, want the result artifact of %s", got[0], id)
	}
	var st struct {
		StatusUpdate *struct {
			TaskID string                 `json:"taskId"`
			Status struct{ State string } `json:"status"`
			Final  *bool                  `json:"final"`
		} `json:"statusUpdate"`
	}
	if err := json.Unmarshal(got[1], &st); err != nil || st.StatusUpdate == nil || st.StatusUpdate.TaskID != id ||
		st.StatusUpdate.Status.State != "TASK_STATE_COMPLETED" || st.StatusUpdate.Final != nil {
		t.Errorf("second notification %s, want the completed status of %s (v1.0: no final)", got[1], id)
	}
	for i, h := range hdrs[:2] {
		if h.Get("Content-Type") != "application/a2a+json" || h.Get("X-A2A-Notification-Token") != "tok-1" {
			t.Errorf("notification %d: Content-Type %q, token %q; want application/a2a+json, tok-1", i, h.Get("Content-Type"), h.Get("X-A2A-Notification-Token"))
		}
	}

	t.Run("configs survive the restart; delete", func(t *testing.T) {
		var got struct{ ID string }
		ts.ok(t, "tasks/pushNotificationConfig/get", map[string]any{"id": id, "pushNotificationConfigId": "c1"}, &got)
		ts.ok(t, "DeleteTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}, nil)
		var list struct{ Configs []any }
		ts.ok(t, "ListTaskPushNotificationConfig", map[string]any{"taskId": id}, &list)
		if len(list.Configs) != 0 {
			t.Errorf("configs after delete = %v", list.Configs)
		}
		ts.wantRPCError(t, "DeleteTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}, -32602)
	})
}

// A push config given with a v0.3 message is stored with the task: every
// change is notified from the creation on, as v0.3 tasks (kind "task"),
// with the token and the authentication as headers.
func TestA2APushWithMessage(t *testing.T) {
	ts := startServer(t, allowLoopback)
	h := hooktest.New(t, func(int) int { return http.StatusOK })
	var tk a2aTask
	ts.ok(t, "message/send", map[string]any{"message": msg(true, "", text("hi")),
		"configuration": map[string]any{"pushNotificationConfig": map[string]any{"url": h.URL + "/n", "token": "t",
			"authentication": map[string]any{"schemes": []string{"Bearer"}, "credentials": "cred"}}}}, &tk)
	testutil.Eventually(t, pollTimeout, "the push notifications up to completed", func() bool {
		c := h.Calls()
		return len(c) > 0 && strings.Contains(string(c[len(c)-1].Body), `"completed"`)
	})
	calls := h.Calls()
	var states []string
	for _, c := range calls {
		var n a2aTask
		if err := json.Unmarshal(c.Body, &n); err != nil || n.Kind != "task" || n.ID != tk.ID {
			t.Fatalf("notification %s, want v0.3 task %s", c.Body, tk.ID)
		}
		states = append(states, n.Status.State)
		if c.Header.Get("X-A2A-Notification-Token") != "t" || c.Header.Get("Authorization") != "Bearer cred" ||
			c.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v, want the token, Bearer cred and application/json", c.Header)
		}
	}
	if states[0] != "submitted" || states[len(states)-1] != "completed" {
		t.Errorf("states notified %v, want submitted first, completed last", states)
	}
	var list []struct {
		Push struct{ ID, URL, Token string } `json:"pushNotificationConfig"`
	}
	ts.ok(t, "tasks/pushNotificationConfig/list", map[string]any{"id": tk.ID}, &list)
	if len(list) != 1 || list[0].Push.URL != h.URL+"/n" || list[0].Push.ID == "" {
		t.Errorf("configs = %+v", list)
	}
}
