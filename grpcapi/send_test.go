//go:build grpc

package grpcapi_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/auth"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// TestSendMessageSeedShape: SendMessage without an envelope is seed 003
// §4.2's, as POST /message is on REST: receiver_id, content_type and
// payload_json make this agent send the peer a synapse:message of its own
// (message_id, status queued), which the peer receives; it needs a token
// with tasks:write, and bad fields are refused as on REST.
func TestSendMessageSeedShape(t *testing.T) {
	a := startNode(t, "alpha")
	b := startNode(t, "beta")
	a.pair(t, b)
	b.pair(t, a)
	bID := b.a.Identity().AgentID

	feed, err := b.messages().ReceiveCallback(as(t, adminToken), &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := feed.Header(); err != nil { // subscribed
		t.Fatal(err)
	}
	req := &pb.SendMessageRequest{ReceiverId: bID, ContentType: "json", PayloadJson: `{"temp":21.5}`, CorrelationId: "c-1"}
	resp, err := a.messages().SendMessage(as(t, adminToken), req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if resp.GetMessageId() == "" || resp.GetStatus() != wire.MessageQueued {
		t.Fatalf("SendMessage = %v, want a message_id, queued", resp)
	}
	got := recvUntil(t, feed.Recv, func(m *pb.SynapseMessage) bool { return m.GetId() == resp.GetMessageId() })
	env, err := wire.DecodeEnvelope(got.GetEnvelope(), got.GetMsgpack())
	if err != nil {
		t.Fatal(err)
	}
	var pl wire.MessagePayload
	if err := env.Payload.Decode(&pl); err != nil {
		t.Fatal(err)
	}
	var inner map[string]any
	if got.GetMessageType() != string(wire.MsgSynapseMessage) || got.GetSenderId() != a.a.Identity().AgentID || got.GetCorrelationId() != "c-1" ||
		pl.ContentType != "json" || json.Unmarshal(pl.Payload, &inner) != nil || inner["temp"] != 21.5 {
		t.Errorf("beta received %v with payload %+v, want alpha's synapse:message", got, pl)
	}

	t.Run("refusals", func(t *testing.T) {
		if _, err := a.messages().SendMessage(as(t, ""), req); grpcCode(err) != codes.Unauthenticated {
			t.Errorf("without a token: %v, want Unauthenticated", err)
		}
		if _, err := a.messages().SendMessage(as(t, a.token(t, auth.ScopeTasksRead)), req); grpcCode(err) != codes.PermissionDenied {
			t.Errorf("tasks:read: %v, want PermissionDenied", err)
		}
		for _, bad := range []*pb.SendMessageRequest{
			{ReceiverId: bID, ContentType: "video", PayloadJson: `"x"`},
			{ReceiverId: bID, ContentType: "json", PayloadJson: `{no`},
			{ReceiverId: "nobody", ContentType: "text", PayloadJson: `"x"`},
			{ContentType: "text", PayloadJson: `"x"`},
		} {
			_, err := a.messages().SendMessage(as(t, adminToken), bad)
			if code, tp := codeOf(err); code != codes.InvalidArgument || tp != wire.CodeInvalidParams {
				t.Errorf("%v: %v, want InvalidArgument invalid_params", bad, err)
			}
		}
	})
}

func grpcCode(err error) codes.Code { c, _ := codeOf(err); return c }
