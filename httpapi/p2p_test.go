package httpapi_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/internal/testutil/tasktest"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// startPeerServer runs an agent as a peer node (peernode): its endpoint is
// the address it listens on, so that other agents can pair it.
func startPeerServer(t *testing.T, name string, mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	return startPeerServerP2P(t, name, peer.DefaultConfig(), mutate...)
}

// startPeerServerP2P is startPeerServer with the network's p2p section.
func startPeerServerP2P(t *testing.T, name string, p2p peer.Config, mutate ...func(*agent.Config)) *testServer {
	t.Helper()
	return peerServer(t, peernode.Start(t, peernode.Options{Name: name, AdminToken: adminToken, Config: mutate, Peer: peer.Options{Config: &p2p}}))
}

// reopenPeer opens the stopped peer server ts again, on its data directory
// and address, and returns its new test server.
func reopenPeer(t *testing.T, ts *testServer) *testServer {
	t.Helper()
	ts.node.Open()
	return peerServer(t, ts.node)
}

// peerServer is the test server of the node as it runs now.
func peerServer(t *testing.T, n *peernode.Node) *testServer {
	return &testServer{t: t, cfg: n.Config, a: n.Agent, net: n.Network, srv: n.Server, base: n.URL(), node: n, up: true,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true}, Timeout: 30 * time.Second}}
}

// pairWith makes ts pin other through POST /agents.
func (ts *testServer) pairWith(t *testing.T, other *testServer) map[string]any {
	t.Helper()
	r := ts.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+other.base+`"}`))
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("POST /agents %s: %d %s", other.base, r.status, r.body)
	}
	return r.object(t)
}

// contractWith makes ts negotiate a contract with other (POST /negotiate
// with the defaults), so that hand-made envelopes from ts without a
// protocol_contract_ref are under it implicitly.
func (ts *testServer) contractWith(t *testing.T, other *testServer) {
	t.Helper()
	r := ts.do(t, "POST", api("/negotiate"), []byte(`{"peer":"`+other.a.Identity().AgentID+`"}`))
	if r.status != http.StatusCreated {
		t.Fatalf("POST /negotiate with %s: %d %s", other.base, r.status, r.body)
	}
}

// agentKey reads the private key an agent keeps in its data directory.
func agentKey(t *testing.T, ts *testServer) ed25519.PrivateKey {
	t.Helper()
	return tasktest.Key(t, ts.cfg.DataDir)
}

// envelopeFrom builds an envelope from one agent to another, signed with
// from's key after build (which may change it) ran.
func envelopeFrom(t *testing.T, from, to *testServer, typ wire.MessageType, payload any, build func(m *wire.UnifiedSynapseMessage)) *wire.UnifiedSynapseMessage {
	t.Helper()
	var pl wire.RawPayload
	if payload != nil {
		var err error
		if pl, err = wire.NewJSONPayload(payload); err != nil {
			t.Fatal(err)
		}
	}
	id := from.a.Identity()
	m := wire.NewMessage(typ, wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint},
		wire.AgentRef{AgentID: to.a.Identity().AgentID}, pl, time.Now())
	if build != nil {
		build(m)
	}
	if err := wire.Sign(m, agentKey(t, from)); err != nil {
		t.Fatal(err)
	}
	return m
}

func envelopeJSON(t *testing.T, m *wire.UnifiedSynapseMessage) []byte {
	t.Helper()
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// postEnvelope sends raw envelope bytes to POST /message without a token.
func (ts *testServer) postEnvelope(t *testing.T, body []byte, opts ...reqOpt) *reply {
	t.Helper()
	return ts.do(t, "POST", api("/message"), body, append([]reqOpt{withToken("")}, opts...)...)
}

func echoRequest(taskID string) *wire.TaskRequestPayload {
	return &wire.TaskRequestPayload{Task: wire.TaskSpec{ID: taskID, Type: "echo", Payload: wire.JSONValue(`{"x":1}`)}}
}

func TestPeersAPI(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	bID := b.a.Identity().AgentID

	t.Run("refusals", func(t *testing.T) {
		a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"ftp://127.0.0.1:1"}`)).wantError(t, 400, wire.CodeInvalidParams)
		a.do(t, "POST", api("/agents"), []byte(`{}`)).wantError(t, 400, wire.CodeInvalidParams)
		a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+a.base+`"}`)).wantError(t, 400, wire.CodeInvalidParams)
		closed := freeAddr(t)
		a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"http://`+closed+`"}`)).wantError(t, 502, wire.CodeCallbackUndeliverable)
		a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+b.base+`"}`), withToken("")).wantError(t, 401, wire.CodeUnauthorized)
	})
	t.Run("pair", func(t *testing.T) {
		r := a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+b.base+`/"}`))
		r.wantStatus(t, http.StatusCreated)
		p := r.object(t)
		if p["agent_id"] != bID || p["public_key"] != b.a.Identity().PublicKey || p["endpoint"] != b.base || p["status"] != "online" {
			t.Errorf("paired peer = %v, want %s at %s online with its key", p, bID, b.base)
		}
		if loc := r.header.Get("Location"); loc != api("/agents/"+bID) {
			t.Errorf("Location = %q", loc)
		}
		a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+b.base+`"}`)).wantStatus(t, http.StatusOK)
		// Seed 003 §4.3: ListAgentsResponse {agents, total}, each agent's
		// capabilities a list of strings (its task types); the full
		// declaration is agent_capabilities.
		var list struct {
			Agents []struct {
				AgentID           string                  `json:"agent_id"`
				Capabilities      []string                `json:"capabilities"`
				AgentCapabilities *wire.AgentCapabilities `json:"agent_capabilities"`
			} `json:"agents"`
			Total *int `json:"total"`
		}
		testutil.Eventually(t, 10*time.Second, "B's capabilities learnt at pairing", func() bool {
			r = a.do(t, "GET", api("/agents"), nil)
			r.wantStatus(t, http.StatusOK)
			return json.Unmarshal(r.body, &list) == nil && len(list.Agents) == 1 && list.Agents[0].AgentCapabilities != nil
		})
		if g := list.Agents[0]; g.AgentID != bID || list.Total == nil || *list.Total != 1 ||
			!slices.Contains(g.Capabilities, "echo") || len(g.Capabilities) != len(g.AgentCapabilities.SupportedTaskTypes) {
			t.Errorf("GET /agents = %s, want B with total 1 and its task types as capabilities", r.body)
		}
		// QueryAgent (GET /agents/{agent_id}) answers seed 003's
		// CapabilitiesResponse, the peer record beside it.
		var d struct {
			AgentID            string   `json:"agent_id"`
			SupportedTaskTypes []string `json:"supported_task_types"`
			ProtocolVersion    string   `json:"protocol_version"`
			MaxConcurrentTasks int      `json:"max_concurrent_tasks"`
			PublicKey          string   `json:"public_key"`
		}
		r = a.do(t, "GET", api("/agents/"+bID), nil)
		r.wantStatus(t, http.StatusOK)
		if err := json.Unmarshal(r.body, &d); err != nil || d.AgentID != bID || !slices.Contains(d.SupportedTaskTypes, "echo") ||
			d.ProtocolVersion == "" || d.MaxConcurrentTasks != b.cfg.MaxConcurrentTasks || d.PublicKey != b.a.Identity().PublicKey {
			t.Errorf("GET /agents/%s = %s, want B's CapabilitiesResponse", bID, r.body)
		}
		self := a.do(t, "GET", api("/agents/"+a.a.Identity().AgentID), nil).object(t)
		if self["agent_id"] != a.a.Identity().AgentID || self["public_key"] != nil {
			t.Errorf("GET /agents/{self} = %v, want this agent's capabilities", self)
		}
		a.do(t, "GET", api("/agents/nobody"), nil).wantError(t, 404, wire.CodeNotFound)
	})
	t.Run("a changed key is refused", func(t *testing.T) {
		old := b.a.Identity().PublicKey
		b.stop()
		if err := os.Remove(filepath.Join(b.cfg.DataDir, agent.KeyFile)); err != nil {
			t.Fatal(err)
		}
		b2 := reopenPeer(t, b)
		t.Cleanup(b2.stop)
		if b2.a.Identity().AgentID != bID || b2.a.Identity().PublicKey == old {
			t.Fatalf("restarted agent is %s with key %s; want the same id with a new key", b2.a.Identity().AgentID, b2.a.Identity().PublicKey)
		}
		a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+b.base+`"}`)).wantError(t, 409, wire.CodeInvalidStateChange)
		if got := a.do(t, "GET", api("/agents/"+bID), nil).object(t)["public_key"]; got != old {
			t.Errorf("pinned key = %v after the refused re-pin, want the old one", got)
		}
		a.do(t, "DELETE", api("/agents/"+bID), nil).wantStatus(t, http.StatusNoContent)
		a.do(t, "DELETE", api("/agents/"+bID), nil).wantError(t, 404, wire.CodeNotFound)
		r := a.do(t, "POST", api("/agents"), []byte(`{"endpoint":"`+b.base+`"}`))
		r.wantStatus(t, http.StatusCreated)
		if got := r.object(t)["public_key"]; got != b2.a.Identity().PublicKey {
			t.Errorf("re-pinned key = %v, want the new one", got)
		}
	})
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestInboundSecurity(t *testing.T) {
	a := startPeerServer(t, "a")
	b := startPeerServer(t, "b")
	c := startPeerServer(t, "stranger")
	a.pairWith(t, b)
	b.pairWith(t, a)
	b.contractWith(t, a)

	t.Run("a replay has no second effect", func(t *testing.T) {
		taskID := uuid.NewString()
		body := envelopeJSON(t, envelopeFrom(t, b, a, wire.MsgTaskRequest, echoRequest(taskID), nil))
		r := a.postEnvelope(t, body)
		r.wantStatus(t, http.StatusAccepted)
		if m := r.object(t); m["accepted"] != true || m["duplicate"] != nil {
			t.Errorf("first answer = %s", r.body)
		}
		for i := range 3 {
			r = a.postEnvelope(t, body)
			r.wantStatus(t, http.StatusOK)
			m := r.object(t)
			if m["accepted"] != true || m["duplicate"] != true || m["code"] != string(wire.CodeIDDuplicate) {
				t.Errorf("replay %d answer = %s, want a TP-ID004 duplicate", i, r.body)
			}
		}
		a.waitStatus(t, taskID, wire.StatusCompleted)
		if ids := a.listIDs(t, "task_type=echo"); len(ids) != 1 || ids[0] != taskID {
			t.Errorf("tasks on the receiver = %v, want only %s", ids, taskID)
		}
	})

	t.Run("a tampered signed field is refused", func(t *testing.T) {
		cases := map[string]func(m *wire.UnifiedSynapseMessage){
			"tp_version":   func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "1.0.1" },
			"message_id":   func(m *wire.UnifiedSynapseMessage) { m.MessageID = m.MessageID[:35] + flipHex(m.MessageID[35]) },
			"message_type": func(m *wire.UnifiedSynapseMessage) { m.MessageType = wire.MsgTaskCancel },
			"timestamp": func(m *wire.UnifiedSynapseMessage) {
				m.Timestamp = m.Timestamp[:22] + flipHex(m.Timestamp[22]) + m.Timestamp[23:]
			},
			"correlation_id":        func(m *wire.UnifiedSynapseMessage) { m.CorrelationID = "x" },
			"protocol_contract_ref": func(m *wire.UnifiedSynapseMessage) { m.ProtocolContractRef = "contract-1" },
			"receiver removed":      func(m *wire.UnifiedSynapseMessage) { m.Receiver = wire.AgentRef{} },
			"sender.agent_id":       func(m *wire.UnifiedSynapseMessage) { m.Sender.AgentID += "x" },
			"payload": func(m *wire.UnifiedSynapseMessage) {
				raw := strings.Replace(string(m.Payload.Bytes()), `"x":1`, `"x":0`, 1)
				p, err := wire.RawJSONPayload([]byte(raw))
				if err != nil {
					t.Fatal(err)
				}
				m.Payload = p
			},
			"signature": func(m *wire.UnifiedSynapseMessage) {
				sig, _ := base64.StdEncoding.DecodeString(m.Signature)
				sig[10] ^= 0x40
				m.Signature = base64.StdEncoding.EncodeToString(sig)
			},
		}
		for name, tamper := range cases {
			t.Run(name, func(t *testing.T) {
				taskID := uuid.NewString()
				m := envelopeFrom(t, b, a, wire.MsgTaskRequest, echoRequest(taskID), nil)
				tamper(m)
				a.postEnvelope(t, envelopeJSON(t, m)).wantError(t, 401, wire.CodeIDUnknownSender)
				a.do(t, "GET", api("/task/"+taskID), nil).wantError(t, 404, wire.CodeTaskNotFound)
			})
		}
	})

	t.Run("timestamps outside ±300 s", func(t *testing.T) {
		for _, off := range []time.Duration{-301 * time.Second, 301 * time.Second} {
			m := envelopeFrom(t, b, a, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: "online"}, func(m *wire.UnifiedSynapseMessage) {
				m.Timestamp = wire.FormatTimestamp(time.Now().Add(off))
			})
			a.postEnvelope(t, envelopeJSON(t, m)).wantError(t, 401, wire.CodeIDStaleTimestamp)
		}
	})

	t.Run("an unpaired sender", func(t *testing.T) {
		m := envelopeFrom(t, c, a, wire.MsgTaskRequest, echoRequest(uuid.NewString()), nil)
		a.postEnvelope(t, envelopeJSON(t, m)).wantError(t, 401, wire.CodeIDUnknownSender)
	})

	t.Run("malformed envelopes", func(t *testing.T) {
		a.postEnvelope(t, []byte(`{"tp_version":`)).wantError(t, 400, wire.CodeMessageFormatInvalid)
		v2 := envelopeFrom(t, b, a, wire.MsgHeartbeat, nil, func(m *wire.UnifiedSynapseMessage) { m.TPVersion = "2.0.0" })
		a.postEnvelope(t, envelopeJSON(t, v2)).wantError(t, 400, wire.CodeVerUnsupported)
		hops := envelopeFrom(t, b, a, wire.MsgHeartbeat, nil, func(m *wire.UnifiedSynapseMessage) { m.TraceInfo = &wire.TraceInfo{HopCount: 6} })
		a.postEnvelope(t, envelopeJSON(t, hops)).wantError(t, 400, wire.CodeTraHopLimit)
		other := envelopeFrom(t, b, a, wire.MsgHeartbeat, nil, func(m *wire.UnifiedSynapseMessage) { m.Receiver.AgentID = "someone_else" })
		a.postEnvelope(t, envelopeJSON(t, other)).wantError(t, 400, wire.CodeInvalidParams)
	})

	t.Run("capability query is answered with a signed envelope", func(t *testing.T) {
		for _, msgpack := range []bool{false, true} {
			q := envelopeFrom(t, b, a, wire.MsgCapabilityQuery, nil, nil)
			body, opts := envelopeJSON(t, q), []reqOpt(nil)
			if msgpack {
				var err error
				if body, err = wire.EncodeEnvelopeMsgpack(q); err != nil {
					t.Fatal(err)
				}
				opts = append(opts, withHeader("Content-Type", wire.ContentMsgpack))
			}
			r := a.postEnvelope(t, body, opts...)
			r.wantStatus(t, http.StatusOK)
			resp, err := wire.DecodeEnvelope(r.body, msgpack)
			if err != nil {
				t.Fatalf("answer (msgpack %v) is not an envelope: %v", msgpack, err)
			}
			pub, _ := base64.StdEncoding.DecodeString(a.a.Identity().PublicKey)
			if err := wire.Verify(resp, pub); err != nil {
				t.Errorf("answer (msgpack %v) does not verify with the agent's key: %v", msgpack, err)
			}
			var caps wire.AgentCapabilities
			if err := resp.Payload.Decode(&caps); err != nil {
				t.Fatal(err)
			}
			if resp.MessageType != wire.MsgCapabilityResponse || resp.CorrelationID != q.MessageID || caps.AgentID != a.a.Identity().AgentID {
				t.Errorf("answer %s correlation %s agent %s", resp.MessageType, resp.CorrelationID, caps.AgentID)
			}
			modes := map[wire.TransportMode]bool{}
			for _, m := range caps.SupportedTransportModes {
				modes[m] = true
			}
			if !modes[wire.TransportCallback] || !modes[wire.TransportHybrid] {
				t.Errorf("transport modes = %v, want callback and hybrid", caps.SupportedTransportModes)
			}
		}
	})

	t.Run("the callback endpoint takes envelopes too", func(t *testing.T) {
		m := envelopeFrom(t, b, a, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: "online", ActiveTasks: 3, MaxTasks: 3}, nil)
		r := a.do(t, "POST", api("/callback"), envelopeJSON(t, m), withToken(""))
		r.wantStatus(t, http.StatusAccepted)
		p := a.do(t, "GET", api("/agents/"+b.a.Identity().AgentID), nil).object(t)
		if p["status"] != peer.PeerBusy || p["active_tasks"] != 3.0 {
			t.Errorf("peer after a full heartbeat = %v, want busy with 3 active tasks", p)
		}
	})
}

func flipHex(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

func TestOutboxAPI(t *testing.T) {
	fast := peer.DefaultConfig()
	fast.MaxRetries, fast.RetryBaseDelayMS = 0, 10
	a := startPeerServerP2P(t, "a", fast)
	b := startPeerServerP2P(t, "b", fast)
	a.pairWith(t, b)
	b.pairWith(t, a)
	bID := b.a.Identity().AgentID
	b.stop()
	id := a.submit(t, `{"task_type":"echo","payload":{},"target":"`+bID+`"}`)
	var items []map[string]any
	testutil.Eventually(t, pollTimeout, "a dead letter", func() bool {
		r := a.do(t, "GET", api("/outbox?state=dead&peer="+bID), nil)
		r.wantStatus(t, http.StatusOK)
		var body struct {
			Items         []map[string]any `json:"items"`
			NextPageToken *string          `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || body.NextPageToken == nil {
			t.Fatalf("GET /outbox = %s", r.body)
		}
		items = body.Items
		return len(items) == 1
	})
	it := items[0]
	for _, k := range []string{"id", "peer", "type", "attempts", "last_error", "created_at"} {
		if _, ok := it[k]; !ok {
			t.Errorf("dead letter %v has no %q", it, k)
		}
	}
	if it["peer"] != bID || it["type"] != string(wire.MsgTaskRequest) || it["state"] != "dead" {
		t.Errorf("dead letter = %v", it)
	}
	tok := a.do(t, "POST", api("/tokens"), []byte(`{"name":"w","scopes":["tasks:write"]}`)).object(t)["token"].(string)
	a.do(t, "GET", api("/outbox"), nil, withToken(tok)).wantError(t, 403, wire.CodePermissionDenied)
	a.do(t, "POST", api("/outbox/nope/retry"), nil).wantError(t, 404, wire.CodeNotFound)
	a.do(t, "GET", api("/outbox?state=maybe"), nil).wantError(t, 400, wire.CodeInvalidParams)
	a.do(t, "POST", api("/outbox/retry"), nil).wantError(t, 400, wire.CodeInvalidParams)

	r := a.do(t, "POST", api("/outbox/retry?peer="+bID), nil)
	r.wantStatus(t, http.StatusOK)
	if got := r.object(t)["requeued"]; got != 1.0 {
		t.Errorf("requeued = %v, want 1", got)
	}
	testutil.Eventually(t, pollTimeout, "the retried letter to die again", func() bool {
		return strings.Contains(string(a.do(t, "GET", api("/outbox?state=dead"), nil).body), it["id"].(string))
	})
	r = a.do(t, "POST", api("/outbox/"+it["id"].(string)+"/retry"), nil)
	r.wantStatus(t, http.StatusOK)
	if got := r.object(t)["state"]; got != "pending" {
		t.Errorf("retried item state = %v", got)
	}
	testutil.Eventually(t, pollTimeout, "the retried letter to die again", func() bool {
		return strings.Contains(string(a.do(t, "GET", api("/outbox?state=dead"), nil).body), it["id"].(string))
	})
	a.do(t, "DELETE", api("/outbox/"+it["id"].(string)), nil).wantStatus(t, http.StatusNoContent)
	a.do(t, "DELETE", api("/outbox/"+it["id"].(string)), nil).wantError(t, 404, wire.CodeNotFound)
	if got := a.task(t, id)["status"]; got != "pending" {
		t.Errorf("task whose request was dropped is %v, want pending", got)
	}
}
