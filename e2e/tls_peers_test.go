package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestTLSPeersCA: two agents serving TLS with certificates of one CA,
// each verifying https peers against it (tls.peer_ca_file), pair over
// https and delegate a task; the envelopes are signed as over plain HTTP.
// An agent without the CA cannot pair: the certificate is not trusted.
func TestTLSPeersCA(t *testing.T) {
	ca := newTestCA(t, t.TempDir())
	peerCA := `"peer_ca_file": ` + quote(ca.file)
	a := startTLSAgent(t, ca, peerCA)
	b := startTLSAgent(t, ca, peerCA)
	for _, p := range [][2]*tlsAgent{{a, b}, {b, a}} {
		if status, body := p[0].post("/agents", `{"endpoint":"`+p[1].url()+`"}`); status != http.StatusCreated {
			t.Fatalf("POST /agents %s: %d %s", p[1].url(), status, body)
		}
	}
	_, body, _ := b.get(prefix+"/identity", false)
	var id struct {
		AgentID  string `json:"agent_id"`
		Endpoint string `json:"endpoint"`
	}
	if err := json.Unmarshal([]byte(body), &id); err != nil || !strings.HasPrefix(id.Endpoint, "https://") {
		t.Fatalf("B's identity %s: %v", body, err)
	}
	status, res := a.post("/task?wait=30", `{"task_type":"echo","payload":{"hello":"b"},"target":"`+id.AgentID+`"}`)
	var v struct {
		Status     string `json:"status"`
		ResultJSON string `json:"result_json"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(res), &v) != nil || v.Status != "completed" || v.ResultJSON != `{"hello":"b"}` {
		t.Fatalf("delegated echo over https: %d %s", status, res)
	}

	c := startTLSAgent(t, ca, "")
	status, res = c.post("/agents", `{"endpoint":"`+b.url()+`"}`)
	if status == http.StatusCreated || !strings.Contains(res, "certificate") {
		t.Errorf("pairing without the CA: %d %s, want a refusal naming the certificate", status, res)
	}
}

// post sends body as JSON to path below the API prefix with the admin
// token.
func (ta *tlsAgent) post(path, body string) (int, string) {
	ta.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, ta.url()+prefix+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ta.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := ta.hc.Do(req)
	if err != nil {
		ta.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
