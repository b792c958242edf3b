package a2asdk_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

const apiPrefix = "/api/v1/synapse"

// call sends a native API request to tg with its admin token.
func (tg *target) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, tg.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tg.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Two agent processes that both serve a2a_jsonrpc negotiate: the contract
// picks a2a_jsonrpc at B's /a2a (A offers it first), both sides keep it,
// and a task runs on B through that endpoint with the official client,
// built from the card found there, with a token B issued for A.
func TestNegotiateA2AJSONRPC(t *testing.T) {
	cfg := `{"negotiation": {"transports": ["a2a_jsonrpc", "native_tp"]}}`
	a, b := startSynapse(t, cfg), startSynapse(t, cfg)
	for _, x := range [][2]*target{{a, b}, {b, a}} {
		if st, body := x[0].call(t, http.MethodPost, apiPrefix+"/agents", map[string]string{"endpoint": x[1].base}); st != http.StatusCreated {
			t.Fatalf("pair: %d %s", st, body)
		}
	}
	var bID struct {
		AgentID string `json:"agent_id"`
	}
	if st, body := b.call(t, http.MethodGet, apiPrefix+"/identity", nil); st != http.StatusOK || json.Unmarshal(body, &bID) != nil || bID.AgentID == "" {
		t.Fatalf("B's identity: %d %s", st, body)
	}
	st, body := a.call(t, http.MethodPost, apiPrefix+"/negotiate", map[string]string{"peer": bID.AgentID})
	var made struct {
		Contract struct {
			ContractID string `json:"contract_id"`
			Transport  struct {
				Protocol, Endpoint string
			} `json:"transport_method"`
		} `json:"contract"`
	}
	if st != http.StatusCreated || json.Unmarshal(body, &made) != nil {
		t.Fatalf("negotiate: %d %s", st, body)
	}
	tr := made.Contract.Transport
	if tr.Protocol != "a2a_jsonrpc" || tr.Endpoint != b.base+"/a2a" {
		t.Fatalf("contract transport %+v, want a2a_jsonrpc at %s/a2a", tr, b.base)
	}
	if st, body := b.call(t, http.MethodGet, apiPrefix+"/contracts/"+made.Contract.ContractID, nil); st != http.StatusOK || !strings.Contains(string(body), `"a2a_jsonrpc"`) {
		t.Fatalf("B's copy of the contract: %d %s", st, body)
	}

	// A runs a task on B through the contract's transport.
	var tok struct {
		Token string `json:"token"`
	}
	st, body = b.call(t, http.MethodPost, apiPrefix+"/tokens", map[string]any{"name": "agent-a", "scopes": []string{"tasks:read", "tasks:write"}})
	if st != http.StatusCreated || json.Unmarshal(body, &tok) != nil || tok.Token == "" {
		t.Fatalf("token on B: %d %s", st, body)
	}
	via := &target{name: "B via the contract", base: strings.TrimSuffix(tr.Endpoint, "/a2a"), token: tok.Token}
	c, ctx := via.client(t)
	tk := send(t, c, ctx, message("", a2a.NewTextPart("over a2a_jsonrpc")))
	if d, ok := tk.Artifacts[0].Parts[0].Data().(map[string]any); tk.Status.State != a2a.TaskStateCompleted || !ok || d["text"] != "over a2a_jsonrpc" {
		t.Fatalf("task on B = %+v", tk)
	}
	if st, body := b.call(t, http.MethodGet, apiPrefix+"/task/"+string(tk.ID), nil); st != http.StatusOK || !strings.Contains(string(body), `"completed"`) {
		t.Errorf("the task in B's store: %d %s", st, body)
	}
}
