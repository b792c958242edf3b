//go:build grpc

package grpcapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

func TestMessageRPCs(t *testing.T) {
	a := startNode(t, "alpha")
	b := startNode(t, "beta")
	a.pair(t, b) // a accepts b's envelopes
	mc := a.messages()
	ctx := as(t, adminToken)

	// ReceiveCallback first, so it sees what follows.
	feed, err := mc.ReceiveCallback(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Header(); err != nil { // subscribed
		t.Fatal(err)
	}

	var sentID string
	t.Run("send message", func(t *testing.T) {
		m, env := envelope(t, b, a, wire.MsgCapabilityQuery, nil)
		sentID = m.MessageID
		resp, err := mc.SendMessage(as(t, ""), &pb.SendMessageRequest{Envelope: env, ReceiverId: a.a.Identity().AgentID})
		if err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
		if resp.GetStatus() != "replied" || resp.GetMessageId() != m.MessageID {
			t.Fatalf("SendMessage = %+v, want replied to %s", resp, m.MessageID)
		}
		reply, err := wire.DecodeEnvelope(resp.GetReplyEnvelope(), false)
		if err != nil {
			t.Fatalf("reply envelope: %v", err)
		}
		if reply.MessageType != wire.MsgCapabilityResponse || reply.CorrelationID != m.MessageID || reply.Sender.AgentID != a.a.Identity().AgentID {
			t.Errorf("reply = %s from %s correlating %s", reply.MessageType, reply.Sender.AgentID, reply.CorrelationID)
		}
		// The same envelope again: a duplicate, as POST /message says.
		again, err := mc.SendMessage(as(t, ""), &pb.SendMessageRequest{Envelope: env})
		if err != nil {
			t.Fatalf("SendMessage again: %v", err)
		}
		r := a.rest(t, "POST", "/message", "", env)
		if again.GetStatus() != "duplicate" || again.GetCode() == "" || r.status != http.StatusOK || r.object(t)["code"] != again.GetCode() {
			t.Errorf("again = %+v; REST %d %s", again, r.status, r.body)
		}
	})

	t.Run("receive callback", func(t *testing.T) {
		got := recvUntil(t, feed.Recv, func(m *pb.SynapseMessage) bool { return m.GetId() == sentID })
		if got.GetSenderId() != b.a.Identity().AgentID || got.GetMessageType() != string(wire.MsgCapabilityQuery) || got.GetSeq() == 0 {
			t.Errorf("callback = %+v", got)
		}
		if _, err := wire.DecodeEnvelope(got.GetEnvelope(), got.GetMsgpack()); err != nil {
			t.Errorf("callback envelope: %v", err)
		}
	})

	t.Run("unpaired sender", func(t *testing.T) {
		c := startNode(t, "gamma")
		_, env := envelope(t, c, a, wire.MsgCapabilityQuery, nil)
		_, err := mc.SendMessage(as(t, ""), &pb.SendMessageRequest{Envelope: env})
		r := a.rest(t, "POST", "/message", "", env)
		code, reason := codeOf(err)
		if code != codes.Unauthenticated || reason != r.errorCode(t) || r.status != http.StatusUnauthorized {
			t.Errorf("gRPC %v (%s), REST %d %s", code, reason, r.status, r.body)
		}
	})

	t.Run("empty envelope", func(t *testing.T) {
		_, err := mc.SendMessage(as(t, ""), &pb.SendMessageRequest{})
		if code, _ := codeOf(err); code != codes.InvalidArgument {
			t.Errorf("SendMessage() = %v, want InvalidArgument", err)
		}
	})

	t.Run("stream messages", func(t *testing.T) {
		st, err := mc.StreamMessages(as(t, adminToken))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Header(); err != nil { // observing
			t.Fatal(err)
		}
		m, env := envelope(t, b, a, wire.MsgCapabilityQuery, nil)
		if err := st.Send(&pb.SynapseMessage{Envelope: env}); err != nil {
			t.Fatal(err)
		}
		// The answer, and (admin: observer) the envelope itself.
		var answered, observed bool
		for range 10 {
			got, err := st.Recv()
			if err != nil {
				t.Fatalf("Recv: %v", err)
			}
			switch {
			case got.GetMessageType() == string(wire.MsgCapabilityResponse) && got.GetCorrelationId() == m.MessageID:
				answered = true
			case got.GetId() == m.MessageID && got.GetSeq() > 0:
				observed = true
			}
			if answered && observed {
				break
			}
		}
		if !answered || !observed {
			t.Fatalf("answered %v observed %v", answered, observed)
		}
		if err := st.Send(&pb.SynapseMessage{Envelope: []byte("{")}); err != nil {
			t.Fatal(err)
		}
		bad, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var e wire.Error
		if bad.GetMessageType() != "error" || json.Unmarshal([]byte(bad.GetErrorJson()), &e) != nil || e.Code == "" {
			t.Errorf("answer to a broken envelope = %+v", bad)
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("stream needs tasks:write", func(t *testing.T) {
		st, err := mc.StreamMessages(as(t, a.token(t, auth.ScopeTasksRead)))
		if err == nil {
			_, err = st.Recv()
		}
		if code, _ := codeOf(err); code != codes.PermissionDenied {
			t.Errorf("StreamMessages with tasks:read = %v, want PermissionDenied", err)
		}
	})
}

func TestCapabilityRPCs(t *testing.T) {
	a := startNode(t, "alpha")
	b := startNode(t, "beta")
	a.pair(t, b)
	cc := a.caps()
	ctx := as(t, adminToken)

	t.Run("get capabilities", func(t *testing.T) {
		got, err := cc.GetCapabilities(as(t, ""), &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		var rest wire.AgentCapabilities
		if err := json.Unmarshal(a.rest(t, "GET", "/capabilities", "", nil).body, &rest); err != nil {
			t.Fatal(err)
		}
		if got.GetAgentId() != rest.AgentID || got.GetProtocolVersion() != rest.ProtocolVersion ||
			len(got.GetSupportedTaskTypes()) != len(rest.SupportedTaskTypes) || got.GetMaxConcurrentTasks() != int32(rest.MaxConcurrentTasks) {
			t.Errorf("gRPC %+v, REST %+v", got, rest)
		}
		var full wire.AgentCapabilities
		if err := json.Unmarshal([]byte(got.GetCapabilitiesJson()), &full); err != nil || full.AgentID != rest.AgentID {
			t.Errorf("capabilities_json: %v %s", err, got.GetCapabilitiesJson())
		}
	})

	t.Run("query agent", func(t *testing.T) {
		self, err := cc.QueryAgent(ctx, &pb.QueryAgentRequest{AgentId: a.a.Identity().AgentID})
		if err != nil || self.GetAgentName() != "alpha" || len(self.GetSupportedTaskTypes()) == 0 {
			t.Errorf("QueryAgent(self) = %+v, %v", self, err)
		}
		peer, err := cc.QueryAgent(ctx, &pb.QueryAgentRequest{AgentId: b.a.Identity().AgentID})
		if err != nil || peer.GetAgentId() != b.a.Identity().AgentID || peer.GetAgentName() != "beta" {
			t.Errorf("QueryAgent(peer) = %+v, %v", peer, err)
		}
	})

	t.Run("list agents", func(t *testing.T) {
		got, err := cc.ListAgents(ctx, &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		var rest struct {
			Agents []peer.PeerInfo `json:"agents"`
		}
		if err := json.Unmarshal(a.rest(t, "GET", "/agents", adminToken, nil).body, &rest); err != nil {
			t.Fatal(err)
		}
		if int(got.GetTotal()) != len(rest.Agents) || len(got.GetAgents()) != 1 {
			t.Fatalf("ListAgents = %+v, REST %+v", got, rest.Agents)
		}
		g, r := got.GetAgents()[0], rest.Agents[0]
		if g.GetAgentId() != r.AgentID || g.GetEndpoint() != r.Endpoint || g.GetStatus() != r.Status {
			t.Errorf("gRPC %+v, REST %+v", g, r)
		}
	})

	t.Run("list needs a token", func(t *testing.T) {
		_, err := cc.ListAgents(as(t, ""), &emptypb.Empty{})
		if code, _ := codeOf(err); code != codes.Unauthenticated {
			t.Errorf("ListAgents without token = %v, want Unauthenticated", err)
		}
	})
}
