package contracts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// inSystem puts an agent in another system.
func inSystem(id string) func(*agent.Config) { return func(c *agent.Config) { c.SystemID = id } }

// negotiated asks b for a contract on a's side and checks both sides
// stored the same terms.
func negotiated(t *testing.T, a, b *peerNode, req negotiate.Request) *contracts.Info {
	t.Helper()
	ci, err := a.a.Network.Negotiate(context.Background(), b.id(), req)
	if err != nil {
		t.Fatalf("Negotiate(%s → %s): %v", a.cfg.AgentName, b.cfg.AgentName, err)
	}
	other, err := b.a.Contracts().Get(ci.Contract.ContractID)
	if err != nil {
		t.Fatalf("%s has no copy of contract %s: %v", b.cfg.AgentName, ci.Contract.ContractID, err)
	}
	mine, _ := json.Marshal(ci.Contract)
	theirs, _ := json.Marshal(other.Contract)
	if !bytes.Equal(mine, theirs) {
		t.Fatalf("the two copies differ:\n%s\n%s", mine, theirs)
	}
	if ci.Role != contracts.RoleRequester || other.Role != contracts.RoleResponder || ci.Peer != b.id() || other.Peer != a.id() ||
		ci.Status != negotiate.StatusActive || other.Status != negotiate.StatusActive {
		t.Fatalf("requester's copy %s/%s/%s, responder's %s/%s/%s", ci.Role, ci.Peer, ci.Status, other.Role, other.Peer, other.Status)
	}
	return ci
}

// refused asks b for a contract and expects code, with its registry status.
func refused(t *testing.T, a, b *peerNode, req negotiate.Request, code wire.ErrorCode) *wire.Error {
	t.Helper()
	ci, err := a.a.Network.Negotiate(context.Background(), b.id(), req)
	if err == nil {
		t.Fatalf("Negotiate made contract %s, want %s", ci.Contract, code)
	}
	we := wantCode(t, err, code)
	if d, _ := wire.Lookup(code); we.Status() != d.Status {
		t.Errorf("status %d, want %d", we.Status(), d.Status)
	}
	return we
}

// alternative reads the alternative_proposal of a refusal.
func alternative(t *testing.T, we *wire.Error) negotiate.Proposal {
	t.Helper()
	var p negotiate.Proposal
	raw, _ := json.Marshal(we.Details["alternative_proposal"])
	if err := json.Unmarshal(raw, &p); err != nil || we.Details["rejected"] != true {
		t.Fatalf("details %v: want rejected with an alternative_proposal", we.Details)
	}
	return p
}

// sendAs posts an envelope of type typ from `from` to `to`, built by
// edit before it is signed with from's key, and returns the HTTP status
// and the TPError code of the answer ("" for a 2xx).
func sendAs(t *testing.T, from, to *peerNode, typ wire.MessageType, payload any, now time.Time, edit func(m *wire.UnifiedSynapseMessage)) (int, wire.ErrorCode) {
	t.Helper()
	pl, err := wire.NewJSONPayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	id := from.a.Identity()
	m := wire.NewMessage(typ, wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint}, wire.AgentRef{AgentID: to.id()}, pl, now)
	if edit != nil {
		edit(m)
	}
	if err := wire.Sign(m, peerKey(t, from)); err != nil {
		t.Fatal(err)
	}
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(to.url()+peer.MessagePath, wire.ContentJSON, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, ""
	}
	var eb wire.ErrorBody
	if err := json.Unmarshal(raw, &eb); err != nil || eb.Error == nil {
		t.Fatalf("answer %d %s is not a TPError", resp.StatusCode, raw)
	}
	return resp.StatusCode, eb.Error.Code
}

// taskRequest is a p2p:task_request payload.
func taskRequest(id, taskType, payload string) *wire.TaskRequestPayload {
	return &wire.TaskRequestPayload{Task: wire.TaskSpec{ID: id, Type: taskType, Payload: wire.JSONValue(payload)}}
}

// received returns the first envelope of type typ that n accepted.
func received(t *testing.T, n *peerNode, typ wire.MessageType) (*wire.UnifiedSynapseMessage, []byte) {
	t.Helper()
	var found *peer.ReceivedMessage
	testutil.Eventually(t, 10*time.Second, n.cfg.AgentName+" to receive a "+string(typ), func() bool {
		msgs, _ := n.a.Messages().Since(0)
		for i := range msgs {
			if msgs[i].Type == typ {
				found = &msgs[i]
				return true
			}
		}
		return false
	})
	m, err := wire.DecodeEnvelopeJSON(found.Raw)
	if err != nil {
		t.Fatal(err)
	}
	return m, found.Raw
}

// wireTap is a tiny HTTP proxy in front of an agent that keeps the body
// of every request it forwards: what crossed the network.
type wireTap struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newWireTap(t *testing.T, target string) *wireTap {
	t.Helper()
	w := &wireTap{}
	client := &http.Client{Timeout: 30 * time.Second}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.bodies = append(w.bodies, body)
		w.mu.Unlock()
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := client.Do(req)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			rw.Header()[k] = v
		}
		rw.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(rw, resp.Body)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// envelopes returns the envelopes of type typ that went through the tap.
func (w *wireTap) envelopes(typ wire.MessageType) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [][]byte
	for _, b := range w.bodies {
		if bytes.Contains(b, []byte(`"message_type":"`+string(typ)+`"`)) {
			out = append(out, b)
		}
	}
	return out
}

// chatStub is a stand-in for an OpenAI-compatible LLM server: mapping
// requests (the negotiation's prompt) get mapping; any other chat gets
// "LLM: <the last message>".
type chatStub struct {
	srv     *httptest.Server
	mu      sync.Mutex
	mapping string
	calls   int
}

func newChatStub(t *testing.T, mapping string) *chatStub {
	t.Helper()
	s := &chatStub{mapping: mapping}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string                  `json:"model"`
			Messages []negotiate.ChatMessage `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" ||
			json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "stub" || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.calls++
		reply := "LLM: " + req.Messages[len(req.Messages)-1].Content
		if strings.HasPrefix(req.Messages[len(req.Messages)-1].Content, "Requested interface") {
			reply = s.mapping
		}
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": reply}}}})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// withLLM configures the stub as the agent's LLM backend.
func (s *chatStub) withLLM(c *agent.Config) {
	c.Negotiation.LLM = &negotiate.LLMConfig{URL: s.srv.URL + "/v1", Model: "stub", APIKey: "test-key"}
}
