package e2e_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// hmacHeader is an X-Synapse-Signature value for body at t, one v1 entry
// per secret, computed here rather than with package wire.
func hmacHeader(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	h := "t=" + ts
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write([]byte(ts + "."))
		m.Write(body)
		h += ",v1=" + hex.EncodeToString(m.Sum(nil))
	}
	return h
}

// TestHMACBetweenProcesses: two agents that share secrets (the receiver
// has a new and an old one: a rotation) sign every envelope with
// X-Synapse-Signature and delegate a task; on POST /callback a missing,
// tampered, stale or replayed signature is 401, the right one (even with
// only the old secret) is accepted.
func TestHMACBetweenProcesses(t *testing.T) {
	dir := t.TempDir()
	const aID, bID = "edge_hmac_a", "edge_hmac_b"
	ca := filepath.Join(dir, "a.json")
	writeJSON(t, ca, map[string]any{"agent_id": aID, "p2p": map[string]any{
		"peer_secrets": []any{map[string]any{"agent_id": bID, "secret_envs": []string{"AB_SECRET"}}}}})
	cb := filepath.Join(dir, "b.json")
	writeJSON(t, cb, map[string]any{"agent_id": bID, "p2p": map[string]any{
		"peer_secrets": []any{map[string]any{"agent_id": aID, "secret_envs": []string{"AB_SECRET", "AB_SECRET_OLD"}}}}})
	a := startAgent(t, agentOpts{args: []string{"--config", ca}, env: []string{"AB_SECRET=new-secret"}})
	b := startAgent(t, agentOpts{args: []string{"--config", cb}, env: []string{"AB_SECRET=new-secret", "AB_SECRET_OLD=old-secret"}})
	pairBoth(t, a, b)

	t.Run("agents sharing a secret delegate", func(t *testing.T) {
		_, id := a.submit(http.StatusCreated, `{"task_type":"echo","payload":{"n":1},"target":"`+bID+`"}`)
		a.waitTask(id, 30*time.Second, "completed", func(v taskView) bool { return v.Status == "completed" })
	})

	ack := func(n int) []byte {
		return envelopeAs(t, a, aID, bID, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: "online", ActiveTasks: n}, "")
	}
	post := func(body []byte, header string) response {
		if header == "" {
			return b.call(http.MethodPost, prefix+"/callback", body)
		}
		return b.call(http.MethodPost, prefix+"/callback", body, wire.HeaderSignature, header)
	}
	reason := func(r response) string {
		var e struct {
			Error struct {
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(r.body, &e)
		s, _ := e.Error.Details["reason"].(string)
		return s
	}
	for _, tc := range []struct {
		name   string
		body   []byte
		header func(body []byte) string
		code   wire.ErrorCode
		reason string
	}{
		{"missing", ack(1), func([]byte) string { return "" }, wire.CodeIDUnknownSender, "missing"},
		{"tampered", ack(2), func(body []byte) string { return hmacHeader(time.Now(), append([]byte("x"), body...), "new-secret") },
			wire.CodeIDUnknownSender, "mismatch"},
		{"wrong secret", ack(3), func(body []byte) string { return hmacHeader(time.Now(), body, "guess") }, wire.CodeIDUnknownSender, "mismatch"},
		{"stale", ack(4), func(body []byte) string { return hmacHeader(time.Now().Add(-10*time.Minute), body, "new-secret") },
			wire.CodeIDStaleTimestamp, "stale"},
	} {
		t.Run(tc.name+" is 401", func(t *testing.T) {
			r := post(tc.body, tc.header(tc.body))
			if r.status != http.StatusUnauthorized || errorCode(r) != tc.code || reason(r) != tc.reason {
				t.Errorf("%s, want 401 %s reason %s", r, tc.code, tc.reason)
			}
		})
	}
	t.Run("the old secret of a rotation is accepted, a replay is 401", func(t *testing.T) {
		body := ack(5)
		h := hmacHeader(time.Now(), body, "old-secret")
		if r := post(body, h); r.status != http.StatusAccepted {
			t.Fatalf("signed with the old secret: %s, want 202", r)
		}
		if r := post(body, h); r.status != http.StatusUnauthorized || reason(r) != "replayed" {
			t.Errorf("replayed: %s, want 401 reason replayed", r)
		}
	})
	t.Run("a peer without a secret needs none", func(t *testing.T) {
		c := startAgent(t, agentOpts{})
		cID, _ := identityOf(t, c)
		pairBoth(t, b, c)
		body := envelopeAs(t, c, cID, bID, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: "online"}, "")
		if r := b.call(http.MethodPost, prefix+"/callback", body); r.status != http.StatusAccepted {
			t.Errorf("%s, want 202", r)
		}
	})
}

// TestGroupIdempotencyBodyKey: POST /group with the same idempotency_key
// in the body creates one group and replays the answer; another body with
// the key is 422 (seed 003 §5.3).
func TestGroupIdempotencyBodyKey(t *testing.T) {
	a := startAgent(t, agentOpts{})
	body := []byte(`{"name":"plant","idempotency_key":"create-plant-1"}`)
	r1 := a.call(http.MethodPost, prefix+"/group", body)
	r2 := a.call(http.MethodPost, prefix+"/group", body)
	if r1.status != http.StatusCreated || r2.status != http.StatusCreated || string(r1.body) != string(r2.body) ||
		r2.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("twice: %s / %s, want the same 201 replayed", r1, r2)
	}
	if r := a.call(http.MethodPost, prefix+"/group", []byte(`{"name":"other","idempotency_key":"create-plant-1"}`)); r.status != http.StatusUnprocessableEntity {
		t.Errorf("another body with the key: %s, want 422", r)
	}
	r := a.call(http.MethodGet, prefix+"/groups", nil)
	var list struct {
		Groups []json.RawMessage `json:"groups"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Groups) != 1 {
		t.Errorf("GET /groups: %s, want one group", r)
	}
}
