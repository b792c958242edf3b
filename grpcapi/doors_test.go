//go:build grpc

package grpcapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/google/uuid"
	"google.golang.org/grpc/metadata"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/grpcapi"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/peer/frame"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/transport/mqtt/mqtttest"
	"github.com/synapse-edge/synapse/wire"
)

// doorAnswer is what a door answered, reduced to what a peer acts on.
type doorAnswer struct {
	Status int
	Code   string
}

func (a doorAnswer) String() string { return fmt.Sprintf("%d %s", a.Status, a.Code) }

// answerOf reads a POST /message answer body: a TPError's code, or an
// accepted answer's code (TP-ID004 for a duplicate).
func answerOf(status int, body []byte) doorAnswer {
	var b struct {
		Code  string `json:"code"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &b)
	if b.Error != nil {
		return doorAnswer{status, b.Error.Code}
	}
	return doorAnswer{status, b.Code}
}

// hostile is one envelope of the hostile set and the headers that go
// with it.
type hostile struct {
	name   string
	env    []byte
	header map[string]string
	want   doorAnswer
}

// door sends one envelope with its headers and returns the answer.
type door struct {
	name string
	send func(t *testing.T, env []byte, header map[string]string) doorAnswer
}

// TestOneReceiverAllDoors: the same hostile envelopes through POST
// /message, POST /message/batch, the WebSocket stream, gRPC SendMessage
// and StreamMessages, and MQTT get the same answers, and so do
// synapse:message envelopes (seed 003's SendMessage between agents), good
// and hostile; the WebSocket and
// gRPC doors check the HMAC and the sender's order as POST /message does,
// and an illegal transition (a cancel of, or information for, a completed
// task) is refused with 409 everywhere.
func TestOneReceiverAllDoors(t *testing.T) {
	broker := mqtttest.Start(t, mqtttest.Options{})
	a := startNode(t, "doors-a")  // a paired sender without an HMAC secret
	hs := startNode(t, "doors-h") // a paired sender that shares a secret
	b := startNode(t, "doors-b", withPeerConfig(func() peer.Config {
		c := peer.DefaultConfig()
		c.PeerSecrets = []peer.PeerSecretConfig{{AgentID: hs.a.Identity().AgentID, Secrets: [][]byte{[]byte("shared-secret")}}}
		return c
	}()))
	nc := startNode(t, "doors-n") // a paired sender without a contract
	b.pair(t, a)
	b.pair(t, hs)
	b.pair(t, nc)
	bID := b.a.Identity().AgentID

	// B's inbox on the broker, and a sender's side of it.
	opts := mqtt.Options{URL: broker.URL(), MaxReconnectInterval: 200 * time.Millisecond}
	inbox, err := mqtt.NewTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	inbox.SetReceiver(b.net.Inbound().Receiver())
	if err := inbox.Start(context.Background(), "doors", bID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inbox.Close(context.Background()) })
	out, err := mqtt.NewTransport(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Start(context.Background(), "doors", "doors-sender"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = out.Close(context.Background()) })
	waitCtx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	for _, c := range []*mqtt.Client{inbox.Client(), out.Client()} {
		if err := c.WaitUp(waitCtx); err != nil {
			t.Fatal(err)
		}
	}

	tok := b.token(t, auth.ScopeTasksWrite)
	ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(b.base, "http", "ws", 1)+wire.APIPrefix+"/messages/stream",
		http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	sctx, scancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok), 5*time.Minute)
	defer scancel()
	stream, err := b.messages().StreamMessages(sctx)
	if err != nil {
		t.Fatal(err)
	}
	batchSeq := uint64(0)

	doors := []door{
		{"POST /message", func(t *testing.T, env []byte, h map[string]string) doorAnswer {
			req, _ := http.NewRequest("POST", b.base+wire.APIPrefix+"/message", bytes.NewReader(env))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := (&http.Client{Timeout: pollTimeout}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return answerOf(resp.StatusCode, body)
		}},
		{"POST /message/batch", func(t *testing.T, env []byte, h map[string]string) doorAnswer {
			it := peer.BatchItem{Envelope: env}
			if s, ok := h[peer.HeaderSeq]; ok {
				it.Seq, _ = strconv.ParseUint(s, 10, 64)
				it.Prev, _ = strconv.ParseUint(h[peer.HeaderSeqPrev], 10, 64)
			} else {
				batchSeq++ // a batch orders every envelope: a number after none
				it.Seq = batchSeq
			}
			body, _ := json.Marshal(peer.BatchRequest{Messages: []peer.BatchItem{it}})
			req, _ := http.NewRequest("POST", b.base+wire.APIPrefix+"/message/batch", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if _, ok := h[wire.HeaderSignature]; ok { // the HMAC signs the body sent
				req.Header.Set(wire.HeaderSignature, hmacHeader(time.Now(), body, "shared-secret"))
			}
			resp, err := (&http.Client{Timeout: pollTimeout}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			rb, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				return answerOf(resp.StatusCode, rb) // refused as a whole
			}
			var ans peer.BatchAnswer
			if err := json.Unmarshal(rb, &ans); err != nil || len(ans.Results) != 1 {
				t.Fatalf("batch answer %s: %v", rb, err)
			}
			r := ans.Results[0]
			if r.Error != nil {
				return doorAnswer{r.Status, string(r.Error.Code)}
			}
			return answerOf(r.Status, r.Body)
		}},
		{"WebSocket", func(t *testing.T, env []byte, h map[string]string) doorAnswer {
			if err := ws.WriteMessage(websocket.TextMessage, frame.Append(nil, h, env)); err != nil {
				t.Fatal(err)
			}
			_ = ws.SetReadDeadline(time.Now().Add(pollTimeout))
			_, data, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			var st doorAnswer = answerOf(0, data)
			switch {
			case st.Code != "" && st.Code != string(wire.CodeIDDuplicate):
				d, _ := wire.Lookup(wire.ErrorCode(st.Code))
				st.Status = d.Status
			case st.Code == string(wire.CodeIDDuplicate), bytes.Contains(data, []byte(`"tp_version"`)):
				st.Status = 200
			default:
				st.Status = 202
			}
			return st
		}},
		{"gRPC SendMessage", func(t *testing.T, env []byte, h map[string]string) doorAnswer {
			ctx := as(t, "")
			for k, v := range h {
				ctx = metadata.AppendToOutgoingContext(ctx, strings.ToLower(k), v)
			}
			resp, err := b.messages().SendMessage(ctx, &pb.SendMessageRequest{Envelope: env})
			if err != nil {
				code := grpcapi.ErrorCode(err)
				d, _ := wire.Lookup(code)
				return doorAnswer{d.Status, string(code)}
			}
			return grpcStatus(resp.GetStatus(), resp.GetCode())
		}},
		{"gRPC StreamMessages", func(t *testing.T, env []byte, h map[string]string) doorAnswer {
			if err := stream.Send(&pb.SynapseMessage{Envelope: frame.Append(nil, h, env)}); err != nil {
				t.Fatal(err)
			}
			m, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if m.GetMessageType() == "error" {
				var e wire.Error
				_ = json.Unmarshal([]byte(m.GetErrorJson()), &e)
				return doorAnswer{e.Status(), string(e.Code)}
			}
			var acc peer.Accepted
			_ = json.Unmarshal([]byte(m.GetPayloadJson()), &acc)
			return grpcStatus(m.GetMessageType(), string(acc.Code))
		}},
		{"MQTT", func(t *testing.T, env []byte, h map[string]string) doorAnswer {
			ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
			defer cancel()
			o := out.Send(ctx, &transport.Message{Kind: transport.Envelope, To: "mqtt:///" + bID, Body: env,
				ContentType: wire.ContentJSON, Header: h})
			if o.Status == 0 {
				t.Fatalf("MQTT: no answer: %v", o.Err)
			}
			return answerOf(o.Status, o.Reply)
		}},
	}

	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	signed := func(from *node, typ wire.MessageType, payload any, edit func(*wire.UnifiedSynapseMessage)) []byte {
		m, _ := envelope(t, from, b, typ, payload)
		if edit != nil {
			edit(m)
		}
		out, err := wire.EncodeEnvelopeJSON(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	heartbeat := &wire.HeartbeatPayload{Status: "online"}
	// synapse:message, seed 003 §4.2's SendMessage between agents.
	message := &wire.MessagePayload{ContentType: wire.MessageJSON, Payload: wire.JSONValue(`{"receiver_id":"` + bID + `","n":1}`)}
	// withoutVersion is a signed envelope without tp_version: its
	// payload names receiver_id, which a SendMessageRequest has.
	withoutVersion := func(from *node, typ wire.MessageType, payload any) []byte {
		var obj map[string]any
		if err := json.Unmarshal(signed(from, typ, payload, nil), &obj); err != nil {
			t.Fatal(err)
		}
		delete(obj, "tp_version")
		out, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// A task A asked B for and B completed: a cancel of it is an illegal
	// transition (seed 004 §3.2), refused as POST /task/{id}/cancel refuses it.
	a.pair(t, b) // A negotiates a contract with B
	cctx, ccancel := context.WithTimeout(context.Background(), pollTimeout)
	defer ccancel()
	ci, err := a.net.Negotiate(cctx, bID, negotiate.Request{})
	if err != nil {
		t.Fatalf("no contract between A and B: %v", err)
	}
	bPeer := contracts.Peer{ID: bID, Key: agentKey(t, b).Public().(ed25519.PublicKey)}
	underContract := func(typ wire.MessageType, payload any) []byte {
		pl, err := wire.NewJSONPayload(payload)
		if err != nil {
			t.Fatal(err)
		}
		id := a.a.Identity()
		m := wire.NewMessage(typ, wire.AgentRef{AgentID: id.AgentID, SystemID: id.SystemID, Endpoint: id.Endpoint},
			wire.AgentRef{AgentID: bID}, pl, time.Now())
		if err := a.net.Contracts().SealUnder(ci.Contract, bPeer, m); err != nil {
			t.Fatal(err)
		}
		if err := wire.Sign(m, agentKey(t, a)); err != nil {
			t.Fatal(err)
		}
		out, err := wire.EncodeEnvelopeJSON(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	doneID := newID()
	if got := doors[0].send(t, underContract(wire.MsgTaskRequest, map[string]any{"task": map[string]any{"id": doneID, "type": "echo", "payload": map[string]int{"n": 1}}}), nil); got.Status != http.StatusAccepted {
		t.Fatalf("A's task_request under its contract: %v, want 202", got)
	}
	if st := b.waitTask(t, doneID).GetStatus(); st != string(wire.StatusCompleted) {
		t.Fatalf("A's task on B is %s, want completed", st)
	}

	replayed := signed(a, wire.MsgHeartbeat, heartbeat, nil)
	if got := doors[0].send(t, replayed, nil); got.Status != http.StatusAccepted {
		t.Fatalf("the first copy of the replayed envelope: %v, want 202", got)
	}

	// Each case is built once per door (a fresh message id), except the
	// replay, which is the same envelope every time.
	cases := func(i int) []hostile {
		base := uint64(1_000_000 * (i + 1))
		return []hostile{
			{name: "message", env: signed(a, wire.MsgSynapseMessage, message, nil), want: doorAnswer{202, ""}},
			{name: "message, unsigned", env: signed(a, wire.MsgSynapseMessage, message, func(m *wire.UnifiedSynapseMessage) { m.Signature = "" }),
				want: doorAnswer{401, string(wire.CodeIDUnknownSender)}},
			{name: "message, HMAC missing", env: signed(hs, wire.MsgSynapseMessage, message, nil), want: doorAnswer{401, string(wire.CodeIDUnknownSender)}},
			{name: "message, bad content_type", env: signed(a, wire.MsgSynapseMessage, &wire.MessagePayload{ContentType: "video", Payload: wire.JSONValue(`"x"`)}, nil),
				want: doorAnswer{400, string(wire.CodeMessageFormatInvalid)}},
			{name: "message, no payload", env: signed(a, wire.MsgSynapseMessage, &wire.MessagePayload{ContentType: wire.MessageText}, nil),
				want: doorAnswer{400, string(wire.CodeMessageFormatInvalid)}},
			// POST /message took it for a SendMessageRequest (401 without a
			// token): its "receiver_id" was all it looked for.
			{name: "message, no tp_version", env: withoutVersion(a, wire.MsgSynapseMessage, message),
				want: doorAnswer{400, string(wire.CodeMessageFormatInvalid)}},
			{name: "unsigned", env: signed(a, wire.MsgHeartbeat, heartbeat, func(m *wire.UnifiedSynapseMessage) { m.Signature = "" }),
				want: doorAnswer{401, string(wire.CodeIDUnknownSender)}},
			{name: "forged", env: signed(a, wire.MsgHeartbeat, heartbeat, func(m *wire.UnifiedSynapseMessage) {
				if err := wire.Sign(m, otherKey); err != nil {
					t.Fatal(err)
				}
			}), want: doorAnswer{401, string(wire.CodeIDUnknownSender)}},
			{name: "replayed", env: replayed, want: doorAnswer{200, string(wire.CodeIDDuplicate)}},
			{name: "skewed", env: signed(a, wire.MsgHeartbeat, heartbeat, func(m *wire.UnifiedSynapseMessage) {
				m.Timestamp = time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
				if err := wire.Sign(m, agentKey(t, a)); err != nil {
					t.Fatal(err)
				}
			}), want: doorAnswer{401, string(wire.CodeIDStaleTimestamp)}},
			{name: "no contract", env: signed(nc, wire.MsgTaskRequest, map[string]any{"task": map[string]any{"id": newID(), "type": "echo", "payload": map[string]int{"n": 1}}}, nil),
				want: doorAnswer{428, string(wire.CodeNegContractMissing)}},
			{name: "HMAC missing", env: signed(hs, wire.MsgHeartbeat, heartbeat, nil), want: doorAnswer{401, string(wire.CodeIDUnknownSender)}},
			{name: "out of order", env: signed(a, wire.MsgHeartbeat, heartbeat, nil),
				header: map[string]string{peer.HeaderSeq: strconv.FormatUint(base+2, 10), peer.HeaderSeqPrev: strconv.FormatUint(base+1, 10)},
				want:   doorAnswer{503, string(wire.CodeAgentNotReady)}},
			{name: "unknown type", env: signed(a, "p2p:bogus", heartbeat, nil), want: doorAnswer{400, string(wire.CodeMessageFormatInvalid)}},
			{name: "illegal transition", env: underContract(wire.MsgTaskCancel, &wire.TaskCancelPayload{TaskID: doneID}),
				want: doorAnswer{409, string(wire.CodeTaskAlreadyCompleted)}},
			{name: "answer to a completed task", env: underContract(wire.MsgTaskInfoProvided, &wire.TaskInfoProvidedPayload{TaskID: doneID, Fields: wire.JSONValue(`{"n":2}`)}),
				want: doorAnswer{409, string(wire.CodeInvalidStateChange)}},
		}
	}
	for i, d := range doors {
		t.Run(d.name, func(t *testing.T) {
			for _, c := range cases(i) {
				if got := d.send(t, c.env, c.header); got != c.want {
					t.Errorf("%s: answered %v, want %v", c.name, got, c.want)
				}
			}
		})
	}
	// With its HMAC, the secret-sharing sender's envelopes are taken by
	// every door.
	// every door; its synapse:message passes the HMAC to be refused for
	// want of a contract, which it has not negotiated.
	for _, d := range doors {
		env := signed(hs, wire.MsgHeartbeat, heartbeat, nil)
		if got := d.send(t, env, map[string]string{wire.HeaderSignature: hmacHeader(time.Now(), env, "shared-secret")}); got.Status != http.StatusAccepted {
			t.Errorf("%s: the signed envelope of the HMAC peer: %v, want 202", d.name, got)
		}
		env = signed(hs, wire.MsgSynapseMessage, message, nil)
		want := doorAnswer{428, string(wire.CodeNegContractMissing)}
		if got := d.send(t, env, map[string]string{wire.HeaderSignature: hmacHeader(time.Now(), env, "shared-secret")}); got != want {
			t.Errorf("%s: the HMAC peer's synapse:message: %v, want %v", d.name, got, want)
		}
	}
	// Each accepted synapse:message is on B's message feed once: A's, one
	// per door.
	kept, _ := b.net.Messages().Since(0)
	from := map[string]int{}
	for _, m := range kept {
		if m.Type == wire.MsgSynapseMessage {
			from[m.From]++
		}
	}
	if from[a.a.Identity().AgentID] != len(doors) || len(from) != 1 {
		t.Errorf("synapse:message on B's feed by sender: %v, want %d from A", from, len(doors))
	}
}

func grpcStatus(status, code string) doorAnswer {
	switch status {
	case "accepted":
		return doorAnswer{202, code}
	case "duplicate":
		return doorAnswer{200, code}
	}
	return doorAnswer{200, ""}
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// hmacHeader is an X-Synapse-Signature value for body at t (SPEC §3:
// HMAC-SHA256 of "<t>.<body>"), computed here rather than with package wire.
func hmacHeader(t time.Time, body []byte, secret string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(m.Sum(nil))
}
