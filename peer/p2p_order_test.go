package peer_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// orderedPost is one envelope posted with sequence headers, and its answer.
type orderedPost struct {
	status   int
	code     wire.ErrorCode
	ordering string
}

// postOrdered posts a signed heartbeat from `from` to `to` with the given
// sequence headers (prev 0: none).
func postOrdered(t *testing.T, from, to *peerNode, m *wire.UnifiedSynapseMessage, seq, prev uint64) orderedPost {
	t.Helper()
	body, err := wire.EncodeEnvelopeJSON(m)
	if err != nil {
		t.Error(err)
		return orderedPost{}
	}
	req, err := http.NewRequest(http.MethodPost, to.url()+peer.MessagePath, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return orderedPost{}
	}
	req.Header.Set("Content-Type", wire.ContentJSON)
	req.Header.Set(peer.HeaderSeq, strconv.FormatUint(seq, 10))
	if prev != 0 {
		req.Header.Set(peer.HeaderSeqPrev, strconv.FormatUint(prev, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return orderedPost{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	p := orderedPost{status: resp.StatusCode, ordering: resp.Header.Get(peer.HeaderOrdering)}
	if resp.StatusCode/100 != 2 {
		var eb wire.ErrorBody
		if json.Unmarshal(raw, &eb) == nil && eb.Error != nil {
			p.code = eb.Error.Code
		}
	}
	return p
}

// TestOrderedDelivery: a receiver applies a sender's sequenced messages in
// their order whatever order they arrive in, answers a duplicate as one,
// and refuses (retriably) a message whose predecessor does not come.
func TestOrderedDelivery(t *testing.T) {
	a := startPeer(t, "receiver")
	b := startPeer(t, "sender")
	pair(t, a, b)
	me := b.a.Identity()
	key := peerKey(t, b)
	heartbeat := func() *wire.UnifiedSynapseMessage {
		pl, err := wire.NewJSONPayload(&wire.HeartbeatPayload{Status: peer.PeerOnline, MaxTasks: 10})
		if err != nil {
			t.Fatal(err)
		}
		m := wire.NewMessage(wire.MsgHeartbeat, wire.AgentRef{AgentID: me.AgentID}, wire.AgentRef{AgentID: a.id()}, pl, time.Now())
		if err := wire.Sign(m, key); err != nil {
			t.Fatal(err)
		}
		return m
	}
	feed := a.a.Messages()
	from := feed.Last()

	// Three messages, sequence 10 ← 20 ← 30, sent last first: 30 and 20
	// wait for their predecessors.
	msgs := []*wire.UnifiedSynapseMessage{heartbeat(), heartbeat(), heartbeat()}
	seqs := []uint64{10, 20, 30}
	answers := make([]chan orderedPost, 3)
	for i := 2; i >= 0; i-- {
		answers[i] = make(chan orderedPost, 1)
		var prev uint64
		if i > 0 {
			prev = seqs[i-1]
		}
		go func() { answers[i] <- postOrdered(t, b, a, msgs[i], seqs[i], prev) }()
	}
	for i, ch := range answers {
		p := <-ch
		if p.status != http.StatusAccepted || p.ordering != peer.OrderingPerSender {
			t.Errorf("message %d: %d %s, ordering %q; want 202, %q", seqs[i], p.status, p.code, p.ordering, peer.OrderingPerSender)
		}
	}
	got, _ := feed.Since(from)
	want := []string{msgs[0].MessageID, msgs[1].MessageID, msgs[2].MessageID}
	var order []string
	for _, m := range got {
		if m.MessageID == want[0] || m.MessageID == want[1] || m.MessageID == want[2] {
			order = append(order, m.MessageID) // not the sender's own heartbeats
		}
	}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Errorf("feed order %v, want %v (the sender's order)", order, want)
	}

	t.Run("duplicate", func(t *testing.T) {
		if p := postOrdered(t, b, a, msgs[1], 20, 10); p.status != http.StatusOK {
			t.Errorf("message 20 again: %d %s, want 200 (a duplicate)", p.status, p.code)
		}
	})
	t.Run("gap", func(t *testing.T) {
		start := time.Now()
		p := postOrdered(t, b, a, heartbeat(), 50, 40) // 40 never comes
		if p.status != http.StatusServiceUnavailable || p.code != wire.CodeAgentNotReady {
			t.Errorf("message 50 after a missing 40: %d %s, want 503 %s", p.status, p.code, wire.CodeAgentNotReady)
		}
		if waited := time.Since(start); waited < 2*time.Second {
			t.Errorf("refused after %v: the message did not wait for its predecessor", waited)
		}
		// Without a predecessor it goes through.
		if p := postOrdered(t, b, a, heartbeat(), 60, 0); p.status != http.StatusAccepted {
			t.Errorf("message 60 without a predecessor: %d %s, want 202", p.status, p.code)
		}
	})
}
