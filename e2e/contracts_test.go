package e2e_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/wire"
)

// keyOf reads the Ed25519 key an agent keeps in its data directory, so
// that a test can sign envelopes as that agent.
func keyOf(t *testing.T, a *agentProc) ed25519.PrivateKey {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(a.dataDir, "agent.key"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(raw)
	if blk == nil {
		t.Fatal("agent.key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

// envelopeAs signs a message from agent `from` (identity fromID) to toID
// with its own key, as the agent itself would, with an optional contract
// reference.
func envelopeAs(t *testing.T, from *agentProc, fromID, toID string, msgType wire.MessageType, payload any, ref string) []byte {
	t.Helper()
	pl, err := wire.NewJSONPayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.NewMessage(msgType, wire.AgentRef{AgentID: fromID, Endpoint: from.url()}, wire.AgentRef{AgentID: toID}, pl, time.Now())
	m.ProtocolContractRef = ref
	if err := wire.Sign(m, keyOf(t, from)); err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// errorCode is the error.code of an answer, or "".
func errorCode(r response) wire.ErrorCode {
	var e struct {
		Error struct {
			Code wire.ErrorCode `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Code
}

// contractView is one entry of GET /contracts.
type contractView struct {
	Contract struct {
		ContractID     string `json:"contract_id"`
		SecurityLevel  string `json:"security_level"`
		CommunicationT string `json:"communication_tier"`
	} `json:"contract"`
	Peer   string `json:"peer"`
	Role   string `json:"role"`
	Status string `json:"status"`
}

// contractsWith lists a's contracts with peer, newest first.
func contractsWith(t *testing.T, a *agentProc, peer string) []contractView {
	t.Helper()
	r := a.call(http.MethodGet, prefix+"/contracts?peer="+url.QueryEscape(peer), nil)
	var body struct {
		Contracts []contractView `json:"contracts"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil {
		t.Fatalf("GET /contracts: %s", r)
	}
	return body.Contracts
}

// pairBoth pins each agent's key on the other.
func pairBoth(t *testing.T, x, y *agentProc) {
	t.Helper()
	for _, p := range [][2]*agentProc{{x, y}, {y, x}} {
		if r := p[0].call(http.MethodPost, prefix+"/agents", []byte(`{"endpoint":"`+p[1].url()+`"}`)); r.status != http.StatusCreated {
			t.Fatalf("POST /agents %s: %s", p[1].url(), r)
		}
	}
}

// deadLetter waits for a dead letter on a for peer and returns its
// last_error.
func deadLetter(t *testing.T, a *agentProc, peer string, timeout time.Duration) string {
	t.Helper()
	var last string
	testutil.Eventually(t, timeout, "a dead letter for "+peer, func() bool {
		r := a.call(http.MethodGet, prefix+"/outbox?state=dead&peer="+url.QueryEscape(peer), nil)
		var body struct {
			Items []struct {
				LastError string `json:"last_error"`
			} `json:"items"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil || len(body.Items) == 0 {
			return false
		}
		last = body.Items[0].LastError
		return true
	})
	return last
}

// TestContractsBetweenProcesses: a peer's message without a contract is
// refused with 428 TP-NEG010 by default (seed 002 §8.3.4); delegating a
// task negotiates a basic contract first, so plain P2P works; a peer of
// another system gets a high contract, or none (a refusal, the task
// never runs there); and a queued message whose contract expired
// renegotiates and is delivered.
func TestContractsBetweenProcesses(t *testing.T) {
	dir := t.TempDir()
	fast := filepath.Join(dir, "fast.json")
	writeJSON(t, fast, map[string]any{"p2p": map[string]any{"heartbeat_interval_seconds": 1, "retry_base_delay_ms": 100, "max_retries": 30}})
	shortLived := filepath.Join(dir, "short.json")
	writeJSON(t, shortLived, map[string]any{"negotiation": map[string]any{"contract_ttl_seconds": 2},
		"p2p": map[string]any{"heartbeat_interval_seconds": 1}})
	otherSystem := filepath.Join(dir, "other.json")
	writeJSON(t, otherSystem, map[string]any{"system_id": "plant-b"})
	otherNoCrypto := filepath.Join(dir, "other-std.json")
	writeJSON(t, otherNoCrypto, map[string]any{"system_id": "plant-c", "negotiation": map[string]any{"max_security_level": "standard"}})

	a := startAgent(t, agentOpts{args: []string{"--config", fast}})
	b := startAgent(t, agentOpts{args: []string{"--config", shortLived}})
	aID, _ := identityOf(t, a)
	bID, _ := identityOf(t, b)
	pairBoth(t, a, b)
	const wait = 30 * time.Second

	t.Run("no contract is 428 TP-NEG010", func(t *testing.T) {
		ack := &wire.AckPayload{MessageID: "x"}
		r := b.call(http.MethodPost, prefix+"/message", envelopeAs(t, a, aID, bID, wire.MsgAck, ack, ""))
		if r.status != http.StatusPreconditionRequired || errorCode(r) != wire.CodeNegContractMissing {
			t.Fatalf("answer %s, want 428 TP-NEG010", r)
		}
	})
	var first string
	t.Run("delegating negotiates a basic contract first", func(t *testing.T) {
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"n":1},"target":"`+bID+`"}`)
		a.waitTask(id, wait, "completed", func(v taskView) bool { return v.Status == "completed" })
		cs := contractsWith(t, a, bID)
		if len(cs) != 1 || cs[0].Status != "active" || cs[0].Role != "requester" || cs[0].Contract.SecurityLevel != "basic" {
			t.Fatalf("contracts on A: %+v, want one active basic contract A asked for", cs)
		}
		first = cs[0].Contract.ContractID
		theirs := contractsWith(t, b, aID)
		if len(theirs) != 1 || theirs[0].Contract.ContractID != first || theirs[0].Role != "responder" {
			t.Errorf("contracts on B: %+v, want the same contract as responder", theirs)
		}
	})
	t.Run("an expired contract renegotiates and the queued message is delivered", func(t *testing.T) {
		b.kill()
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"n":2},"target":"`+bID+`"}`)
		testutil.Eventually(t, wait, "the contract to expire on A", func() bool {
			cs := contractsWith(t, a, bID)
			return len(cs) > 0 && cs[0].Contract.ContractID == first && cs[0].Status == "expired"
		})
		b.start()
		a.waitTask(id, wait, "completed", func(v taskView) bool { return v.Status == "completed" })
		cs := contractsWith(t, a, bID)
		if len(cs) < 2 || cs[0].Contract.ContractID == first {
			t.Errorf("contracts on A: %+v, want a new one", cs)
		}
		if dead := outboxIDs(t, a, "dead", bID); len(dead) != 0 {
			t.Errorf("dead letters %v, want none", dead)
		}
	})

	t.Run("a peer of another system gets a high contract", func(t *testing.T) {
		c := startAgent(t, agentOpts{args: []string{"--config", otherSystem}})
		cID, _ := identityOf(t, c)
		pairBoth(t, a, c)
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"secret":"s3"},"target":"`+cID+`"}`)
		v := a.waitTask(id, wait, "completed", func(v taskView) bool { return v.Status == "completed" })
		if !strings.Contains(v.ResultJSON, "s3") {
			t.Errorf("result %q", v.ResultJSON)
		}
		cs := contractsWith(t, a, cID)
		if len(cs) != 1 || cs[0].Contract.SecurityLevel != "high" {
			t.Errorf("contracts with the other system: %+v, want one high", cs)
		}
		// A basic contract made by hand is refused there.
		r := a.call(http.MethodPost, prefix+"/negotiate", []byte(`{"peer":"`+cID+`","preferred_security_level":"basic"}`))
		var made contractView
		if r.status != http.StatusCreated || json.Unmarshal(r.body, &made) != nil || made.Contract.SecurityLevel != "high" {
			t.Errorf("negotiating basic across systems: %s, want a high contract", r)
		}
	})
	t.Run("a peer of another system that cannot do high is refused", func(t *testing.T) {
		d := startAgent(t, agentOpts{args: []string{"--config", otherNoCrypto}})
		dID, _ := identityOf(t, d)
		pairBoth(t, a, d)
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{},"target":"`+dID+`"}`)
		if last := deadLetter(t, a, dID, wait); !strings.Contains(last, string(wire.CodeNegSecurity)) {
			t.Errorf("dead letter's last_error %q, want TP-NEG004", last)
		}
		if r := d.call(http.MethodGet, prefix+"/task/"+id, nil); r.status != http.StatusNotFound {
			t.Errorf("the task on D: %s, want 404", r)
		}
		r := d.call(http.MethodPost, prefix+"/message", envelopeAs(t, a, aID, dID, wire.MsgAck, &wire.AckPayload{MessageID: "y"}, ""))
		if r.status != http.StatusPreconditionRequired || errorCode(r) != wire.CodeNegContractMissing {
			t.Errorf("a message without a contract: %s, want 428 TP-NEG010", r)
		}
	})
}
