package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// startGroupServer is startServer with a running group manager.
func startGroupServer(t *testing.T, name string) *testServer {
	t.Helper()
	return startWiredServer(t, name, false)
}

// startWiredServer is an agent named name with a running group manager
// and, when withHIL, human-in-the-loop — as synapse serve wires it — and
// an endpoint peers can reach (a peernode).
func startWiredServer(t *testing.T, name string, withHIL bool, more ...func(*peernode.Options)) *testServer {
	t.Helper()
	fast := peer.DefaultConfig()
	fast.MaxRetries, fast.RetryBaseDelayMS, fast.HeartbeatIntervalSeconds = 3, 50, 1
	opts := peernode.Options{Name: name, AdminToken: adminToken, Groups: true, Peer: peer.Options{Config: &fast}}
	if withHIL {
		opts.HIL = &hil.Options{}
	}
	for _, m := range more {
		m(&opts)
	}
	return peerServer(t, peernode.Start(t, opts))
}

// decodeInto decodes a JSON answer into v.
func (r *reply) decodeInto(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer (%d) does not decode: %v\n%s", r.status, err, r.body)
	}
}

func TestGroupRoutesWithoutManager(t *testing.T) {
	ts := startServer(t)
	ts.do(t, "GET", api("/groups"), nil).wantError(t, http.StatusServiceUnavailable, wire.CodeAgentNotReady)
	ts.do(t, "POST", api("/group"), []byte(`{"name":"g"}`)).wantError(t, http.StatusServiceUnavailable, wire.CodeAgentNotReady)
}

func TestGroupRoutes(t *testing.T) {
	owner := startGroupServer(t, "owner")
	member := startGroupServer(t, "member")
	for _, x := range [][2]*testServer{{owner, member}, {member, owner}} {
		x[0].do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+x[1].base+`"}`)).wantStatus(t, http.StatusCreated)
	}
	memberID := member.a.Identity().AgentID

	var g group.Group
	t.Run("create", func(t *testing.T) {
		r := owner.do(t, "POST", api("/group"), []byte(`{"name":"line 3","description":"d"}`), withHeader("Idempotency-Key", "g-1"))
		r.wantStatus(t, http.StatusCreated)
		r.decodeInto(t, &g)
		if g.GroupID == "" || g.Owner != owner.a.Identity().AgentID || g.Standing != group.StandingMember {
			t.Fatalf("created group = %+v", g)
		}
		if loc := r.header.Get("Location"); loc != api("/group/"+g.GroupID) {
			t.Errorf("Location = %q", loc)
		}
		again := owner.do(t, "POST", api("/group"), []byte(`{"name":"line 3","description":"d"}`), withHeader("Idempotency-Key", "g-1"))
		again.wantStatus(t, http.StatusCreated)
		if string(again.body) != string(r.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay = %s (replayed %q), want the first answer", again.body, again.header.Get("Idempotent-Replayed"))
		}
		owner.do(t, "POST", api("/group"), []byte(`{"name":"other"}`), withHeader("Idempotency-Key", "g-1")).
			wantError(t, http.StatusUnprocessableEntity, wire.CodeIdempotencyMismatch)
		owner.do(t, "POST", api("/group"), []byte(`{"name":""}`)).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		var list struct{ Groups []group.Group }
		owner.do(t, "GET", api("/groups"), nil).decodeInto(t, &list)
		if len(list.Groups) != 1 {
			t.Errorf("GET /groups = %+v, want the one group", list.Groups)
		}
	})
	gpath := func(p string) string { return api("/group/" + g.GroupID + p) }

	t.Run("invite and join", func(t *testing.T) {
		owner.do(t, "POST", gpath("/invite"), []byte(`{"agent_id":"nobody"}`)).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		owner.do(t, "POST", gpath("/invite"), []byte(`{"agent_id":"`+memberID+`","weight":2}`)).wantStatus(t, http.StatusCreated)
		testutil.Eventually(t, pollTimeout, "the invitation", func() bool {
			r := member.do(t, "GET", gpath(""), nil)
			return r.status == http.StatusOK && r.object(t)["standing"] == group.StandingInvited
		})
		member.do(t, "POST", gpath("/join"), []byte(`{"agent_id":"someone-else"}`)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		member.do(t, "POST", gpath("/join"), nil).wantStatus(t, http.StatusAccepted)
		for _, ts := range []*testServer{owner, member} {
			testutil.Eventually(t, pollTimeout, "two members", func() bool {
				var ms struct{ Members []group.Member }
				ts.do(t, "GET", gpath("/members"), nil).decodeInto(t, &ms)
				return len(ms.Members) == 2
			})
		}
		member.do(t, "POST", gpath("/join"), nil).wantStatus(t, http.StatusOK)
	})

	t.Run("only the owner or an admin invites or disbands", func(t *testing.T) {
		member.do(t, "POST", gpath("/invite"), []byte(`{"agent_id":"x"}`)).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		member.do(t, "POST", gpath("/disband"), nil).wantError(t, http.StatusForbidden, wire.CodePermissionDenied)
		owner.do(t, "GET", api("/group/nope/members"), nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
	})

	t.Run("vote", func(t *testing.T) {
		r := member.do(t, "POST", gpath("/vote"), []byte(`{"title":"t","options":["a","b"],"consensus":"weighted"}`))
		r.wantStatus(t, http.StatusAccepted)
		var v group.Vote
		r.decodeInto(t, &v)
		if v.Status != group.VoteProposed {
			t.Fatalf("proposal = %+v", v)
		}
		vpath := gpath("/vote/" + v.VoteID)
		testutil.Eventually(t, pollTimeout, "the vote open on the member", func() bool {
			return member.do(t, "GET", vpath, nil).object(t)["status"] == group.VoteOpen
		})
		owner.do(t, "POST", vpath+"/ballot", []byte(`{"option":"a"}`)).wantStatus(t, http.StatusOK)
		member.do(t, "POST", vpath+"/ballot", []byte(`{"option":"c"}`)).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		member.do(t, "POST", vpath+"/ballot", []byte(`{"option":"b"}`)).wantStatus(t, http.StatusAccepted)
		testutil.Eventually(t, pollTimeout, "the result on the member", func() bool {
			member.do(t, "GET", vpath, nil).decodeInto(t, &v)
			return v.Status == group.VoteClosed
		})
		// The member weighs 2, the owner 1.
		if v.Result.Outcome != group.OutcomeDecided || v.Result.Winner != "b" || len(v.Result.Tally.Ballots) != 2 {
			t.Errorf("result = %+v", v.Result)
		}
		owner.do(t, "POST", vpath+"/ballot", []byte(`{"option":"b"}`)).wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
		member.do(t, "POST", vpath+"/ballot", []byte(`{"option":"a"}`)).wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
		var list struct{ Votes []group.Vote }
		owner.do(t, "GET", gpath("/votes"), nil).decodeInto(t, &list)
		if len(list.Votes) != 1 {
			t.Errorf("votes = %d, want 1", len(list.Votes))
		}
	})

	t.Run("task", func(t *testing.T) {
		r := owner.do(t, "POST", gpath("/task?wait=20"), []byte(`{"task_type":"echo","payload":{"x":1}}`))
		r.wantStatus(t, http.StatusOK)
		var gt group.Task
		r.decodeInto(t, &gt)
		if gt.Status != group.TaskCompleted || !jsonEqual(t, string(gt.Result), `[{"x":1},{"x":1}]`) {
			t.Errorf("group task = %s %s, want completed with both echoes", gt.Status, gt.Result)
		}
		var again group.Task
		owner.do(t, "GET", gpath("/task/"+gt.TaskID), nil).decodeInto(t, &again)
		if again.Status != gt.Status || len(again.Parts) != 2 {
			t.Errorf("GET task = %+v", again)
		}
		owner.do(t, "POST", gpath("/task"), []byte(`{"task_type":"echo","aggregate":"most"}`)).wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
		owner.do(t, "POST", gpath("/task"), []byte(`{"task_type":"nobody-runs-this"}`)).wantError(t, http.StatusForbidden, wire.CodeCapabilityLacking)
	})

	t.Run("message stream", func(t *testing.T) {
		dial := func(ts *testServer, token, query string) *websocket.Conn {
			t.Helper()
			hdr := http.Header{"Authorization": {"Bearer " + token}}
			c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.base, "http")+gpath("/messages/stream")+query, hdr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		next := func(c *websocket.Conn) map[string]any {
			t.Helper()
			_ = c.SetReadDeadline(time.Now().Add(pollTimeout))
			_, data, err := c.ReadMessage()
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("frame is not JSON: %s", data)
			}
			return m
		}
		// An observer with tasks:read replays from the start.
		observer := dial(owner, createToken(t, owner, "obs", "tasks:read"), "?after=0")
		if first := next(observer); first["type"] != string(group.EventCreate) || first["seq"] != float64(1) {
			t.Fatalf("first event = %v, want the creation", first)
		}
		live := dial(member, adminToken, "")
		if err := live.WriteMessage(websocket.TextMessage, []byte(`{"text":"hello from the stream"}`)); err != nil {
			t.Fatal(err)
		}
		// await reads frames until match takes one; 100 frames without it fail.
		await := func(c *websocket.Conn, what string, match func(m map[string]any) bool) {
			t.Helper()
			for range 100 {
				if match(next(c)) {
					return
				}
			}
			t.Fatalf("100 frames without %s", what)
		}
		await(live, "the message's event", func(m map[string]any) bool { // the answer and the event, in either order
			if m["type"] == string(wire.MsgGroupMessage) {
				return true
			}
			_, event := m["seq"] // an announcement of an earlier subtest still arriving
			if _, ok := m["sent"]; !ok && !event {
				t.Fatalf("unexpected frame %v", m)
			}
			return false
		})
		await(observer, "the relayed message", func(m map[string]any) bool { // the observer catches up to it
			if m["type"] != string(wire.MsgGroupMessage) {
				return false
			}
			if p, _ := m["payload"].(map[string]any); p["text"] != "hello from the stream" || m["from"] != memberID {
				t.Errorf("relayed message = %v", m)
			}
			return true
		})
		if err := observer.WriteMessage(websocket.TextMessage, []byte(`{"text":"no"}`)); err != nil {
			t.Fatal(err)
		}
		await(observer, "the answer to the observer's send", func(m map[string]any) bool {
			e, ok := m["error"].(map[string]any)
			if ok && e["code"] != string(wire.CodePermissionDenied) {
				t.Errorf("observer's send answered %v", e)
			}
			return ok
		})
		var evs struct {
			Events  []group.Event
			LastSeq uint64 `json:"last_seq"`
		}
		member.do(t, "GET", gpath("/messages?after=0&limit=1000"), nil).decodeInto(t, &evs)
		if len(evs.Events) == 0 || evs.Events[len(evs.Events)-1].Seq != evs.LastSeq {
			t.Errorf("GET messages = %d events, last_seq %d", len(evs.Events), evs.LastSeq)
		}
	})

	t.Run("leave and disband", func(t *testing.T) {
		owner.do(t, "POST", gpath("/leave"), nil).wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
		member.do(t, "POST", gpath("/leave"), nil).wantStatus(t, http.StatusOK)
		testutil.Eventually(t, pollTimeout, "the member gone on the owner", func() bool {
			var ms struct{ Members []group.Member }
			owner.do(t, "GET", gpath("/members"), nil).decodeInto(t, &ms)
			return len(ms.Members) == 1
		})
		owner.do(t, "POST", gpath("/disband"), nil).wantStatus(t, http.StatusOK)
		if got := owner.do(t, "GET", gpath(""), nil).object(t)["status"]; got != group.StatusDisbanded {
			t.Errorf("status after disband = %v", got)
		}
		owner.do(t, "POST", gpath("/message"), []byte(`{"text":"x"}`)).wantError(t, http.StatusConflict, wire.CodeInvalidStateChange)
	})
}
