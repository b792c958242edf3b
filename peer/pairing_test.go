package peer_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// TestPairingIsMutual: pairing one side asks the other; the task sent
// before the other side accepted waits (with a waiting_for_peer note),
// and completes once an operator accepts the request, without a retry by
// hand.
func TestPairingIsMutual(t *testing.T) {
	a := startPeer(t, "requester")
	b := startPeer(t, "executor")
	if _, _, err := a.a.Pairing().AddPeer(context.Background(), b.url()); err != nil {
		t.Fatalf("AddPeer: %v", err)
	}
	var reqs []peer.PairRequest
	testutil.Eventually(t, 10*time.Second, "the executor to list a pair request", func() bool { reqs = b.a.Pairing().PairRequests(); return len(reqs) == 1 })
	got := reqs[0]
	if got.AgentID != a.id() || got.PublicKey != a.a.Identity().PublicKey || got.Endpoint != a.url() {
		t.Fatalf("pair request = %+v, want %s with its key at %s", got, a.id(), a.url())
	}
	if len(b.a.Pairing().Peers()) != 0 {
		t.Fatalf("the executor trusts %v before anyone accepted", b.a.Pairing().Peers())
	}

	task := submitTo(t, a, b, "echo", `{"x":1}`)
	var last string // the history seen last, logged when the test fails
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the requester's task history: %s", last)
		}
	})
	testutil.Eventually(t, 10*time.Second, "a waiting_for_peer note in the requester's task", func() bool {
		cur, err := a.a.Task(task.ID)
		if err != nil {
			return false
		}
		last = describeHistory(cur)
		for _, h := range cur.History {
			if strings.HasPrefix(h.Reason, peer.WaitingForPeer+": ") && strings.Contains(h.Reason, "peer accept "+a.id()) {
				return true
			}
		}
		return false
	})

	if _, err := b.a.Pairing().AcceptPeer(context.Background(), "nobody", peer.PairOptions{}); err == nil {
		t.Fatal("AcceptPeer of an agent that did not ask succeeded")
	}
	p, err := b.a.Pairing().AcceptPeer(context.Background(), a.id(), peer.PairOptions{})
	if err != nil {
		t.Fatalf("AcceptPeer: %v", err)
	}
	if p.AgentID != a.id() || p.PublicKey != a.a.Identity().PublicKey {
		t.Fatalf("accepted peer = %+v", p)
	}
	done := waitFinal(t, a.a, task.ID)
	if done.Status != wire.StatusCompleted || resultJSON(done) != `{"x":1}` {
		t.Fatalf("task ended %s with %s, want completed with the payload", describe(done), resultJSON(done))
	}
	if n := len(b.a.Pairing().PairRequests()); n != 0 {
		t.Errorf("%d pair requests left after accepting", n)
	}
	if dead := outboxOf(t, a.a, outbox.Dead); len(dead) != 0 {
		t.Errorf("dead letters on the requester: %+v", dead)
	}
}

func describeHistory(task *wire.Task) string {
	if task == nil {
		return "<nil>"
	}
	b, _ := json.Marshal(task.History)
	return string(b)
}

// TestPairRequestChecks: a pair request is listed only when its signature
// verifies with the key it carries and it names its sender; other
// messages of an unknown agent stay TP-ID003, and those of an agent whose
// request waits are refused as retriable.
func TestPairRequestChecks(t *testing.T) {
	b := startPeer(t, "executor")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	me := wire.Identity{AgentID: "plant_stranger_000001", PublicKey: base64.StdEncoding.EncodeToString(pub), Endpoint: "http://127.0.0.1:9"}
	send := func(t *testing.T, msgType wire.MessageType, payload any, key ed25519.PrivateKey) (int, wire.Error) {
		t.Helper()
		pl, err := wire.NewJSONPayload(payload)
		if err != nil {
			t.Fatal(err)
		}
		m := wire.NewMessage(msgType, wire.AgentRef{AgentID: me.AgentID, Endpoint: me.Endpoint}, wire.AgentRef{AgentID: b.id()}, pl, time.Now())
		if err := wire.Sign(m, key); err != nil {
			t.Fatal(err)
		}
		body, err := wire.EncodeEnvelopeJSON(m)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(b.url()+peer.MessagePath, wire.ContentJSON, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var eb wire.ErrorBody
		if err := json.Unmarshal(raw, &eb); err != nil || eb.Error == nil {
			t.Fatalf("answer %d %s is not an error", resp.StatusCode, raw)
		}
		return resp.StatusCode, *eb.Error
	}
	cases := []struct {
		name    string
		typ     wire.MessageType
		payload any
		key     ed25519.PrivateKey
		code    wire.ErrorCode
	}{
		{"heartbeat of a stranger", wire.MsgHeartbeat, &wire.HeartbeatPayload{}, priv, wire.CodeIDUnknownSender},
		{"signed with another key", wire.MsgPairRequest, &me, otherPriv, wire.CodeIDUnknownSender},
		{"identity of another agent", wire.MsgPairRequest, &wire.Identity{AgentID: "someone_else", PublicKey: me.PublicKey, Endpoint: me.Endpoint}, priv, wire.CodeIDUnknownSender},
		{"no endpoint", wire.MsgPairRequest, &wire.Identity{AgentID: me.AgentID, PublicKey: me.PublicKey, Endpoint: "ftp://x"}, priv, wire.CodeInvalidParams},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, e := send(t, c.typ, c.payload, c.key)
			if e.Code != c.code || status/100 != 4 {
				t.Fatalf("answer %d %s (%s), want %s", status, e.Code, e.Message, c.code)
			}
			if n := len(b.a.Pairing().PairRequests()); n != 0 {
				t.Fatalf("%d pair requests listed", n)
			}
		})
	}
	t.Run("valid request", func(t *testing.T) {
		status, e := send(t, wire.MsgPairRequest, &me, priv)
		if status != http.StatusUnauthorized || e.Code != wire.CodePeerApprovalPending || !e.Retriable {
			t.Fatalf("answer %d %+v, want 401 %s retriable", status, e, wire.CodePeerApprovalPending)
		}
		if reqs := b.a.Pairing().PairRequests(); len(reqs) != 1 || reqs[0].AgentID != me.AgentID {
			t.Fatalf("pair requests = %+v", reqs)
		}
		// Now its other messages are refused as retriable too.
		status, e = send(t, wire.MsgHeartbeat, &wire.HeartbeatPayload{}, priv)
		if status != http.StatusUnauthorized || e.Code != wire.CodePeerApprovalPending {
			t.Fatalf("heartbeat answered %d %s, want 401 %s", status, e.Code, wire.CodePeerApprovalPending)
		}
		if len(b.a.Pairing().Peers()) != 0 {
			t.Fatal("a pair request made a peer without an operator")
		}
		// Its endpoint does not answer: accepting it fails and pins nothing.
		if _, err := b.a.Pairing().AcceptPeer(context.Background(), me.AgentID, peer.PairOptions{}); err == nil || len(b.a.Pairing().Peers()) != 0 {
			t.Fatalf("AcceptPeer of an unreachable agent: %v, peers %v", err, b.a.Pairing().Peers())
		}
		if err := b.a.Pairing().DeclinePeer(me.AgentID); err != nil {
			t.Fatalf("DeclinePeer: %v", err)
		}
		if n := len(b.a.Pairing().PairRequests()); n != 0 {
			t.Fatalf("%d pair requests after declining", n)
		}
	})
}

// TestPairingAcceptedLate: the requester's outbox gave up retrying before
// the operator accepted (its messages are dead letters); accepting still
// delivers them, and the task completes.
func TestPairingAcceptedLate(t *testing.T) {
	a := startPeerNet(t, "requester", fastRetries())
	b := startPeerNet(t, "executor", fastRetries())
	if _, _, err := a.a.Pairing().Pair(context.Background(), b.url(), peer.PairOptions{}); err != nil {
		t.Fatalf("Pair: %v", err)
	}
	if n := len(b.a.Pairing().PairRequests()); n != 1 {
		t.Fatalf("%d pair requests listed right after Pair, want 1", n)
	}
	task := submitTo(t, a, b, "echo", `{"late":true}`)
	testutil.Eventually(t, 10*time.Second, "the refused request to become a dead letter", func() bool { return len(outboxOf(t, a.a, outbox.Dead)) > 0 })
	if _, err := b.a.Pairing().AcceptPeer(context.Background(), a.id(), peer.PairOptions{}); err != nil {
		t.Fatalf("AcceptPeer: %v", err)
	}
	done := waitFinal(t, a.a, task.ID)
	if done.Status != wire.StatusCompleted || resultJSON(done) != `{"late":true}` {
		t.Fatalf("task ended %s with %s, want completed", describe(done), resultJSON(done))
	}
}

// TestPairRequestAskedAgain: the pending list is memory only; after the
// other agent restarts, the requester (refused as unknown, TP-ID003, on
// its next heartbeat) sends its request again (askEvery after the first).
func TestPairRequestAskedAgain(t *testing.T) {
	t.Parallel() // it waits for askEvery (5 s) between two requests
	a := startPeerNet(t, "requester", fastRetries())
	b := startPeerNet(t, "executor", fastRetries())
	if _, _, err := a.a.Pairing().Pair(context.Background(), b.url(), peer.PairOptions{}); err != nil {
		t.Fatalf("Pair: %v", err)
	}
	b.stop()
	b.open()
	if n := len(b.a.Pairing().PairRequests()); n != 0 {
		t.Fatalf("%d pair requests after a restart, want none (memory only)", n)
	}
	testutil.Eventually(t, 30*time.Second, "the requester to ask again after the restart", func() bool { return len(b.a.Pairing().PairRequests()) == 1 })
}
