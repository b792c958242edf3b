package peer_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// needsCity is a seed 004 §5.2 TaskHandler: it runs "weather" when the
// payload has a city.
type needsCity struct{}

func (needsCity) GetCapabilities() []string { return []string{"weather"} }

func (needsCity) ValidateTask(taskType string, p map[string]any) ([]wire.MissingField, bool) {
	if _, ok := p["city"].(string); !ok {
		return []wire.MissingField{{Field: "city", Reason: "required"}}, false
	}
	return nil, true
}

func (needsCity) ExecuteTask(ctx context.Context, taskType string, p map[string]any) (any, error) {
	return map[string]any{"city": p["city"], "type": taskType, "sky": "clear"}, nil
}

// TestSeedTaskHandler registers a TaskHandler through P2PProtocol and runs
// a valid and an invalid task with it.
func TestSeedTaskHandler(t *testing.T) {
	a := openAgent(t, testConfig(t), nil)
	var p peer.P2PProtocol = a.P2P()
	if err := p.SetTaskHandler(needsCity{}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetTaskHandler(needsCity{}); err == nil {
		t.Error("registering the same task type twice was accepted")
	}

	ok := waitFinal(t, a, submit(t, a, "weather", `{"city":"Lyon"}`).ID)
	if ok.Status != wire.StatusCompleted || !jsonEqual(t, ok.Result, []byte(`{"city":"Lyon","type":"weather","sky":"clear"}`)) {
		t.Errorf("valid task: %s", describe(ok))
	}
	bad := waitFinal(t, a, submit(t, a, "weather", `{"town":"Lyon"}`).ID)
	if bad.Status != wire.StatusFailed || bad.ErrorCode != wire.CodeInvalidParams || !strings.Contains(bad.ErrorMessage, "missing city") {
		t.Errorf("task without city: %s, error %s %q", describe(bad), bad.ErrorCode, bad.ErrorMessage)
	}

	if st, found := p.GetTaskStatus(ok.ID); !found || st != wire.StatusCompleted {
		t.Errorf("GetTaskStatus(%s) = %q, %v", ok.ID, st, found)
	}
	if _, found := p.GetTaskStatus("no-such-task"); found {
		t.Error("GetTaskStatus of an unknown task found it")
	}
	all := p.ListTasks()
	if len(all) != 2 || all[ok.ID] != wire.StatusCompleted || all[bad.ID] != wire.StatusFailed {
		t.Errorf("ListTasks = %v", all)
	}
	if ep := p.AgentEndpoint(); ep.AgentID != a.Identity().AgentID || ep.AgentID == "" {
		t.Errorf("AgentEndpoint = %+v, identity %+v", ep, a.Identity())
	}
}

// TestSeedCallbackAndHandleMessage sends an envelope with CallbackSender,
// captures it on the wire, and hands it to the receiver's P2PProtocol.
func TestSeedCallbackAndHandleMessage(t *testing.T) {
	a, b := startPeer(t, "alpha"), startPeer(t, "beta")
	pair(t, a, b)
	ctx := context.Background()

	got := make(chan []byte, 1)
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != peer.MessagePath {
			http.Error(w, "wrong path "+r.URL.Path, 404)
			return
		}
		got <- body
		w.WriteHeader(202)
	}))
	defer capture.Close()

	var s peer.CallbackSender = b.a
	m := wire.NewMessage(wire.MsgCapabilityQuery, wire.AgentRef{}, wire.AgentRef{AgentID: a.id()}, wire.RawPayload{}, time.Now())
	if err := s.SendCallback(ctx, capture.URL, m); err != nil {
		t.Fatalf("SendCallback: %v", err)
	}
	var body []byte
	select {
	case body = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the endpoint")
	}
	sent, err := wire.DecodeEnvelopeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	if sent.Sender.AgentID != b.id() || sent.Signature == "" {
		t.Fatalf("sent envelope: sender %q, signature %q", sent.Sender.AgentID, sent.Signature)
	}

	var p peer.P2PProtocol = a.a.P2P()
	reply, err := p.HandleMessage(ctx, sent)
	if err != nil {
		t.Fatalf("HandleMessage: %v", err)
	}
	if reply == nil || reply.MessageType != wire.MsgCapabilityResponse || reply.Receiver.AgentID != b.id() {
		t.Fatalf("reply = %+v", reply)
	}
	tampered := *sent
	tampered.MessageID = "tampered"
	_, err = p.HandleMessage(ctx, &tampered)
	wantCode(t, err, wire.CodeIDUnknownSender)

	// The real peer accepts a signed query; a stopped one is an error.
	m = wire.NewMessage(wire.MsgCapabilityQuery, wire.AgentRef{}, wire.AgentRef{AgentID: a.id()}, wire.RawPayload{}, time.Now())
	if err := s.SendCallback(ctx, a.url(), m); err != nil {
		t.Errorf("SendCallback to the peer: %v", err)
	}
	m = wire.NewMessage(wire.MsgCapabilityQuery, wire.AgentRef{AgentID: "someone-else"}, wire.AgentRef{AgentID: a.id()}, wire.RawPayload{}, time.Now())
	if err := s.SendCallback(ctx, a.url(), m); err == nil {
		t.Error("SendCallback with another agent as sender was accepted")
	}
	a.stop()
	m = wire.NewMessage(wire.MsgCapabilityQuery, wire.AgentRef{}, wire.AgentRef{AgentID: a.id()}, wire.RawPayload{}, time.Now())
	if err := s.SendCallback(ctx, a.url(), m); err == nil {
		t.Error("SendCallback to a stopped peer returned nil")
	}
}

// TestStreamChunks emits partial results; they are log events carrying a
// wire.StreamChunk, numbered from 1, the last one final — for a task run
// as usual and for one run inline by the sync mode before it is stored.
func TestStreamChunks(t *testing.T) {
	a := openAgent(t, testConfig(t), nil, agent.Handler{Type: wire.SupportedTaskType{Type: "words"}, Idempotent: true, Func: func(ctx context.Context, r *agent.Run) (any, error) {
		for i, w := range []string{"one", "two", "three"} {
			if err := r.Chunk(map[string]string{"word": w}, i == 2); err != nil {
				return nil, err
			}
		}
		if err := r.Chunk(make(chan int), false); err == nil {
			return nil, wire.Errorf(wire.CodeExecutionFailed, "a chunk that cannot be encoded was accepted")
		}
		return "done", nil
	}})
	queued := submit(t, a, "words", `{}`).ID
	inline, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "words", Payload: wire.JSONValue(`{}`)}, agent.SubmitOptions{Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{queued, inline.ID} {
		task := waitFinal(t, a, id)
		if task.Status != wire.StatusCompleted {
			t.Fatalf("task: %s", describe(task))
		}
		var chunks []wire.StreamChunk
		for _, e := range eventsOf(t, a, task.ID) {
			if e.Type != wire.EventLog {
				continue
			}
			var c wire.StreamChunk
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatalf("log event %s: %v", e.Data, err)
			}
			chunks = append(chunks, c)
		}
		if len(chunks) != 3 {
			t.Fatalf("task %s: chunks = %+v, want 3", id, chunks)
		}
		for i, c := range chunks {
			want := `{"word":"` + []string{"one", "two", "three"}[i] + `"}`
			if c.TaskID != task.ID || c.Seq != i+1 || c.Final != (i == 2) || !jsonEqual(t, c.Data, []byte(want)) {
				t.Errorf("task %s chunk %d = %+v (data %s), want seq %d data %s", id, i, c, c.Data, i+1, want)
			}
		}
	}
}

// TestSeedListTasksPages: ListTasks reads every page of the store.
func TestSeedListTasksPages(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 501 tasks")
	}
	a := openAgent(t, testConfig(t), nil, agent.Handler{Type: wire.SupportedTaskType{Type: "nop"}, Idempotent: true,
		Func: func(ctx context.Context, r *agent.Run) (any, error) { return nil, nil }})
	const n = 501 // one more than a page
	for i := 0; i < n; i++ {
		if _, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: "nop", Payload: wire.JSONValue(`{}`)}, agent.SubmitOptions{Wait: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	all := a.P2P().ListTasks()
	done := 0
	for _, st := range all {
		if st == wire.StatusCompleted {
			done++
		}
	}
	if len(all) != n || done != n {
		t.Errorf("ListTasks: %d tasks, %d completed; want %d", len(all), done, n)
	}
}
