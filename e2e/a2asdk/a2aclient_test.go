package a2asdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	syna2a "github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/a2aclient"
	"github.com/synapse-edge/synapse/wire"
)

// report is one report the transport gave the agent.
type report struct {
	peer    string
	msgType wire.MessageType
	payload map[string]any
}

// reports records what the transport reports, as the agent's engine
// would receive it.
type reports struct {
	mu  sync.Mutex
	all []report
}

func (r *reports) ReportFromPeer(_ context.Context, peer string, msgType wire.MessageType, pl wire.RawPayload) error {
	var m map[string]any
	if err := pl.Decode(&m); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, report{peer, msgType, m})
	return nil
}

// final returns the final report of a task, if there is one yet.
func (r *reports) final(taskID string) (report, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.all {
		if x.payload["task_id"] != taskID {
			continue
		}
		switch x.msgType {
		case wire.MsgTaskComplete, wire.MsgTaskFailed, wire.MsgTaskReject, wire.MsgTaskAck:
			return x, true
		}
	}
	return report{}, false
}

// types lists the report types of a task in order.
func (r *reports) types(taskID string) []wire.MessageType {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []wire.MessageType
	for _, x := range r.all {
		if x.payload["task_id"] == taskID {
			out = append(out, x.msgType)
		}
	}
	return out
}

const peerID = "peer-b"

// openDB opens a real store file in dir.
func openDB(t *testing.T, dir string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), filepath.Join(dir, store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// newA2AClient starts a transport on db reporting to rep.
func newA2AClient(t *testing.T, db *store.DB, rep a2aclient.Reporter, token string) *a2aclient.Transport {
	t.Helper()
	tr, err := a2aclient.New(a2aclient.Options{Reporter: rep, PollMin: 5 * time.Millisecond, PollMax: 100 * time.Millisecond,
		Token: func(p string) string {
			if p != peerID {
				t.Errorf("token asked for %q, want %q", p, peerID)
			}
			return token
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(t.Context(), syna2a.NewLedger(db)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	return tr
}

// envelope is a message of type msgType from this agent to the peer.
func envelope(t *testing.T, msgType wire.MessageType, payload any) []byte {
	t.Helper()
	pl, err := wire.NewJSONPayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(msgType, wire.AgentRef{AgentID: "agent-a"}, wire.AgentRef{AgentID: peerID}, pl, time.Now())
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sendEnv(t *testing.T, tr transport.Transport, to string, msgType wire.MessageType, payload any) transport.Outcome {
	t.Helper()
	return tr.Send(t.Context(), &transport.Message{Kind: transport.Envelope, To: to, Body: envelope(t, msgType, payload),
		ContentType: "application/json"})
}

// putLocal writes the local task a delegation stands for, as the engine
// keeps it: delegated to target, in state st.
func putLocal(t *testing.T, db *store.DB, id string, st wire.Status, target string) {
	t.Helper()
	now := time.Now().UTC()
	rec, err := store.EncodeTask(&wire.Task{ID: id, Type: "echo", Status: st, Target: target,
		CreatedAt: now, UpdatedAt: now, History: []wire.Transition{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(t.Context(), func(tx *store.Tx) error { return tx.PutRecord(rec) }); err != nil {
		t.Fatal(err)
	}
}

func request(id, taskType, payload string) *wire.TaskRequestPayload {
	return &wire.TaskRequestPayload{Task: wire.TaskSpec{ID: id, Type: taskType, Payload: wire.JSONValue(payload)}}
}

// a2aDest is the transport's destination for a target's A2A endpoint.
func a2aDest(tg *target) string { return "a2a+" + tg.base + "/a2a" }

func tracked(t *testing.T, db *store.DB) []*syna2a.RemoteTask {
	t.Helper()
	all, err := syna2a.NewLedger(db).RemoteTasks()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestA2AClient delegates tasks over A2A to a2a-go's own server and to
// another Synapse agent: the result and the states come back as the
// reports a native peer would send, a cancel reaches the remote task,
// refusals are classified.
func TestA2AClient(t *testing.T) {
	for _, tg := range []*target{startRef(t), startSynapse(t, "")} {
		t.Run(tg.name, func(t *testing.T) {
			db := openDB(t, t.TempDir())
			defer db.Close(context.Background())
			rep := &reports{}
			tr := newA2AClient(t, db, rep, tg.token)
			to := a2aDest(tg)

			if o := sendEnv(t, tr, to, wire.MsgTaskRequest, request("t-echo", "echo", `{"msg":"hi","n":[1,2]}`)); !o.Delivered() {
				t.Fatalf("echo request: %v %v", o.Class, o.Err)
			}
			var fin report
			testutil.Eventually(t, 20*time.Second, "the echo task's result", func() (ok bool) { fin, ok = rep.final("t-echo"); return })
			if fin.msgType != wire.MsgTaskComplete || fin.peer != peerID {
				t.Fatalf("final report %+v, want %s from %s", fin, wire.MsgTaskComplete, peerID)
			}
			out, _ := json.Marshal(fin.payload["result"].(map[string]any)["output"])
			if string(out) != `{"msg":"hi","n":[1,2]}` {
				t.Errorf("result %s, want the echoed payload", out)
			}
			testutil.Eventually(t, 20*time.Second, "the record forgotten", func() bool { return len(tracked(t, db)) == 0 })
			// Sent again (the outbox retries after a lost answer): the
			// task is not run again while it is tracked, and the ack of
			// the result has nothing to send.
			if o := sendEnv(t, tr, to, wire.MsgTaskAck, &wire.TaskAckPayload{TaskID: "t-echo", AckedType: wire.MsgTaskComplete}); !o.Delivered() {
				t.Errorf("ack: %v %v", o.Class, o.Err)
			}

			// A cancel after the end has nothing to do; a cancel of a
			// task whose request is not sent yet waits for it. The local
			// tasks are what the engine wrote (it applied the final
			// report before the record was forgotten), and the answers
			// hold for a transport started afresh on the same file, as
			// after a restart: nothing but the store tells them apart.
			putLocal(t, db, "t-echo", wire.StatusCompleted, peerID)
			putLocal(t, db, "t-unsent", wire.StatusPending, peerID)
			putLocal(t, db, "t-other", wire.StatusPending, "peer-c")
			fresh := newA2AClient(t, db, &reports{}, tg.token)
			for _, x := range []struct {
				tr     transport.Transport
				name   string
				taskID string
				want   transport.Class
			}{
				{tr, "a finished task", "t-echo", transport.Delivered},
				{fresh, "a finished task after a restart", "t-echo", transport.Delivered},
				{fresh, "a pruned task", "t-pruned", transport.Delivered},
				{fresh, "a task delegated to another peer", "t-other", transport.Delivered},
				{tr, "a task not sent yet", "t-unsent", transport.Retry},
				{fresh, "a task not sent yet, after a restart", "t-unsent", transport.Retry},
			} {
				if o := sendEnv(t, x.tr, to, wire.MsgTaskCancel, &wire.TaskCancelPayload{TaskID: x.taskID}); o.Class != x.want {
					t.Errorf("cancel of %s: %v (%v), want %v", x.name, o.Class, o.Err, x.want)
				}
			}

			// A long task, cancelled: the cancel reaches the remote task
			// and its cancelled state comes back as the ack of the cancel.
			if o := sendEnv(t, tr, to, wire.MsgTaskRequest, request("t-long", "sleep", `{"ms":60000}`)); !o.Delivered() {
				t.Fatalf("sleep request: %v %v", o.Class, o.Err)
			}
			if got := tracked(t, db); len(got) != 1 || got[0].TaskID != "t-long" || got[0].RemoteID == "" || got[0].Peer != peerID {
				t.Fatalf("tracked %+v, want t-long's remote task", got)
			}
			if o := sendEnv(t, tr, to, wire.MsgTaskRequest, request("t-long", "sleep", `{"ms":60000}`)); !o.Delivered() {
				t.Fatalf("the same request again: %v %v", o.Class, o.Err)
			}
			if got := tracked(t, db); len(got) != 1 {
				t.Fatalf("the same request again made %d records", len(got))
			}
			testutil.Eventually(t, 20*time.Second, "t-long confirmed or working", func() bool { return len(rep.types("t-long")) > 0 })
			if o := sendEnv(t, tr, to, wire.MsgTaskCancel, &wire.TaskCancelPayload{TaskID: "t-long"}); !o.Delivered() {
				t.Fatalf("cancel: %v %v", o.Class, o.Err)
			}
			testutil.Eventually(t, 20*time.Second, "t-long cancelled", func() (ok bool) { fin, ok = rep.final("t-long"); return })
			if fin.msgType != wire.MsgTaskAck || fin.payload["acked_type"] != string(wire.MsgTaskCancel) || fin.payload["status"] != string(wire.StatusCancelled) {
				t.Errorf("final report of t-long %+v, want the ack of the cancel", fin)
			}
			if got := rep.types("t-long"); got[0] != wire.MsgTaskConfirm && got[0] != wire.MsgTaskStatusUpdate {
				t.Errorf("t-long's reports %q, want a confirm or a status update first", got)
			}

			// A type the peer lacks: refused for good (-32004).
			if o := sendEnv(t, tr, to, wire.MsgTaskRequest, request("t-none", "no-such-type", `{}`)); o.Class != transport.Permanent {
				t.Errorf("unknown type: %v %v, want Permanent", o.Class, o.Err)
			}

			// Messages A2A has no counterpart for, and bad destinations.
			if o := sendEnv(t, tr, to, wire.MsgHeartbeat, map[string]any{}); o.Class != transport.Permanent {
				t.Errorf("heartbeat: %v, want Permanent", o.Class)
			}
			if o := sendEnv(t, tr, tg.base+"/a2a", wire.MsgTaskRequest, request("t-x", "echo", `{}`)); o.Class != transport.Permanent {
				t.Errorf("an http:// destination: %v, want Permanent", o.Class)
			}
		})
	}
}

// TestA2AClientAuth: a Synapse peer refuses a wrong token with 401, which
// is a retry (the peer may not know this agent yet), not a failure.
func TestA2AClientAuth(t *testing.T) {
	tg := startSynapse(t, "")
	db := openDB(t, t.TempDir())
	defer db.Close(context.Background())
	tr := newA2AClient(t, db, &reports{}, "not-the-token")
	o := sendEnv(t, tr, a2aDest(tg), wire.MsgTaskRequest, request("t-auth", "echo", `{}`))
	if o.Class != transport.Retry || !o.Unreached || o.Status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v unreached=%v status %d %v, want Retry, Unreached, 401", o.Class, o.Unreached, o.Status, o.Err)
	}
	if len(tracked(t, db)) != 0 {
		t.Error("a refused request is tracked")
	}
}

// TestA2AClientRestart: the transport stops (and its store is closed)
// while a remote task runs; a new one on the same file resumes tracking
// it and reports its result.
func TestA2AClientRestart(t *testing.T) {
	for _, tg := range []*target{startRef(t), startSynapse(t, "")} {
		t.Run(tg.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir)
			rep := &reports{}
			tr, err := a2aclient.New(a2aclient.Options{Reporter: rep, Token: func(string) string { return tg.token }})
			if err != nil {
				t.Fatal(err)
			}
			if o := sendEnv(t, tr, a2aDest(tg), wire.MsgTaskRequest, request("t-early", "echo", `{}`)); o.Class != transport.Retry {
				t.Errorf("a send before Start: %v, want Retry", o.Class)
			}
			if err := tr.Start(t.Context(), syna2a.NewLedger(db)); err != nil {
				t.Fatal(err)
			}
			if o := sendEnv(t, tr, a2aDest(tg), wire.MsgTaskRequest, request("t-sleep", "sleep", `{"ms":700}`)); !o.Delivered() {
				t.Fatalf("request: %v %v", o.Class, o.Err)
			}
			if err := tr.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, ok := rep.final("t-sleep"); ok {
				t.Fatal("the 700 ms task finished before the restart")
			}

			db = openDB(t, dir)
			defer db.Close(context.Background())
			rep2 := &reports{}
			newA2AClient(t, db, rep2, tg.token)
			var fin report
			testutil.Eventually(t, 20*time.Second, "the result after the restart", func() (ok bool) { fin, ok = rep2.final("t-sleep"); return })
			out, _ := json.Marshal(fin.payload["result"].(map[string]any)["output"])
			if fin.msgType != wire.MsgTaskComplete || !strings.Contains(string(out), `"slept_ms":700`) {
				t.Errorf("final report %+v (output %s), want complete with slept_ms 700", fin, out)
			}
			testutil.Eventually(t, 20*time.Second, "the record forgotten", func() bool { return len(tracked(t, db)) == 0 })
		})
	}
}

// TestA2AClientResend: the outbox sends a task_request again after its
// answer was lost (here: the record of the first send is gone, as after a
// crash before it was written); a Synapse peer answers with the same task,
// by the Idempotency-Key the transport sends.
func TestA2AClientResend(t *testing.T) {
	tg := startSynapse(t, "")
	db := openDB(t, t.TempDir())
	defer db.Close(context.Background())
	tr := newA2AClient(t, db, &reports{}, tg.token)
	body := envelope(t, wire.MsgTaskRequest, request("t-once", "sleep", `{"ms":2000}`))
	remoteID := func() string {
		t.Helper()
		if o := tr.Send(t.Context(), &transport.Message{Kind: transport.Envelope, To: a2aDest(tg), Body: body}); !o.Delivered() {
			t.Fatalf("request: %v %v", o.Class, o.Err)
		}
		all := tracked(t, db)
		if len(all) != 1 {
			t.Fatalf("tracked %+v, want one task", all)
		}
		return all[0].RemoteID
	}
	first := remoteID()
	if err := syna2a.NewLedger(db).DeleteRemoteTask(t.Context(), "t-once"); err != nil {
		t.Fatal(err)
	}
	if again := remoteID(); again != first {
		t.Errorf("the resent request made remote task %s, want %s", again, first)
	}
}

// countingProxy serves tg through a reverse proxy that counts the
// JSON-RPC methods called on it. With refuseStreams it answers
// SubscribeToTask itself with UnsupportedOperation, as a server without
// streaming does.
func countingProxy(t *testing.T, tg *target, refuseStreams bool) (*target, func(method string) int) {
	t.Helper()
	u, err := url.Parse(tg.base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	var mu sync.Mutex
	counts := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		counts[req.Method]++
		mu.Unlock()
		if refuseStreams && req.Method == "SubscribeToTask" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32004,"message":"streaming is not supported"}}`))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	px := *tg
	px.base = srv.URL
	return &px, func(method string) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[method]
	}
}

// TestA2AClientFollowsByStream: the transport follows a remote task by
// subscription (SubscribeToTask) instead of reading it again and again;
// a server that does not stream is polled. The result comes back either
// way.
func TestA2AClientFollowsByStream(t *testing.T) {
	for _, tg := range []*target{startRef(t), startSynapse(t, "")} {
		for _, refuse := range []bool{false, true} {
			name := tg.name + "/stream"
			if refuse {
				name = tg.name + "/no stream"
			}
			t.Run(name, func(t *testing.T) {
				px, calls := countingProxy(t, tg, refuse)
				db := openDB(t, t.TempDir())
				defer db.Close(context.Background())
				rep := &reports{}
				tr := newA2AClient(t, db, rep, tg.token) // polls every 5 to 100 ms
				if o := sendEnv(t, tr, a2aDest(px), wire.MsgTaskRequest, request("t-follow", "sleep", `{"ms":600}`)); !o.Delivered() {
					t.Fatalf("request: %v %v", o.Class, o.Err)
				}
				var fin report
				testutil.Eventually(t, 20*time.Second, "the result", func() (ok bool) { fin, ok = rep.final("t-follow"); return })
				out, _ := json.Marshal(fin.payload["result"].(map[string]any)["output"])
				if fin.msgType != wire.MsgTaskComplete || !strings.Contains(string(out), `"slept_ms":600`) {
					t.Errorf("final report %+v (output %s), want complete with slept_ms 600", fin, out)
				}
				gets, subs := calls("GetTask"), calls("SubscribeToTask")
				switch {
				case refuse && gets < 4:
					t.Errorf("%d GetTask calls in 600 ms without a stream, want polling (>= 4)", gets)
				case !refuse && (subs < 1 || gets > 2):
					t.Errorf("%d SubscribeToTask and %d GetTask calls, want the task followed by its stream", subs, gets)
				}
				t.Logf("%d GetTask, %d SubscribeToTask", gets, subs)
			})
		}
	}
}
