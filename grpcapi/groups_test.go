//go:build grpc

package grpcapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/internal/testutil"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

func TestGroupRPCs(t *testing.T) {
	a := startNode(t, "owner")
	b := startNode(t, "member")
	a.pair(t, b)
	b.pair(t, a)
	ctx := as(t, adminToken)
	bID := b.a.Identity().AgentID

	created, err := a.groups().CreateGroup(ctx, &pb.CreateGroupRequest{Name: "g", Description: "test", InitialMembers: []string{bID}})
	if err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	gid := created.GetGroupId()
	if gid == "" || created.GetStatus() != group.StatusActive {
		t.Fatalf("CreateGroup = %+v", created)
	}

	t.Run("owner joins its own group", func(t *testing.T) {
		ctx := as(t, adminToken)
		got, err := a.groups().JoinGroup(ctx, &pb.JoinGroupRequest{GroupId: gid})
		if err != nil || !got.GetDone() || got.GetStanding() != group.StandingMember {
			t.Errorf("JoinGroup(owner) = %+v, %v", got, err)
		}
	})

	t.Run("invited member joins", func(t *testing.T) {
		ctx := as(t, adminToken)
		testutil.Eventually(t, pollTimeout, "invitation reaches the member", func() bool {
			g, err := b.gm.Group(gid)
			return err == nil && g.Standing == group.StandingInvited
		})
		got, err := b.groups().JoinGroup(ctx, &pb.JoinGroupRequest{GroupId: gid, AgentId: bID})
		if err != nil {
			t.Fatalf("JoinGroup: %v", err)
		}
		if got.GetDone() || got.GetStanding() != group.StandingJoining {
			t.Errorf("JoinGroup = %+v, want sent to the owner (joining)", got)
		}
		testutil.Eventually(t, pollTimeout, "the member's copy says member", func() bool {
			g, err := b.gm.Group(gid)
			return err == nil && g.Standing == group.StandingMember
		})
		testutil.Eventually(t, pollTimeout, "the owner lists the member", func() bool {
			l, err := a.groups().ListGroupMembers(ctx, &pb.ListGroupMembersRequest{GroupId: gid})
			return err == nil && len(l.GetMembers()) == 2
		})
		l, err := a.groups().ListGroupMembers(ctx, &pb.ListGroupMembersRequest{GroupId: gid})
		if err != nil {
			t.Fatal(err)
		}
		var rest struct {
			Members []group.Member `json:"members"`
		}
		if err := json.Unmarshal(a.rest(t, "GET", "/group/"+gid+"/members", adminToken, nil).body, &rest); err != nil {
			t.Fatal(err)
		}
		if len(rest.Members) != len(l.GetMembers()) {
			t.Fatalf("REST members %v, gRPC %v", rest.Members, l.GetMembers())
		}
		for i, m := range l.GetMembers() {
			if m.GetAgentId() != rest.Members[i].AgentID || m.GetRole() != string(rest.Members[i].Role) || m.GetJoinedAt() == "" {
				t.Errorf("member %d: gRPC %+v, REST %+v", i, m, rest.Members[i])
			}
		}
	})

	t.Run("stream group messages", func(t *testing.T) {
		ctx := as(t, adminToken)
		st, err := a.groups().StreamGroupMessages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pb.SynapseMessage{Id: "c1", ReceiverId: gid, PayloadJson: `{"text":"hello"}`}); err != nil {
			t.Fatal(err)
		}
		// The answer and the event, in either order.
		var sent, ev *pb.SynapseMessage
		for sent == nil || ev == nil {
			m := recvUntil(t, st.Recv, func(m *pb.SynapseMessage) bool {
				return m.GetMessageType() == "sent" || m.GetMessageType() == "error" || m.GetMessageType() == string(wire.MsgGroupMessage)
			})
			if m.GetMessageType() == string(wire.MsgGroupMessage) {
				ev = m
			} else {
				sent = m
			}
		}
		if sent.GetMessageType() != "sent" || sent.GetCorrelationId() != "c1" {
			t.Fatalf("answer = %+v", sent)
		}
		if ev.GetSenderId() != a.a.Identity().AgentID || ev.GetReceiverId() != gid || ev.GetSeq() == 0 || ev.GetId() == "" {
			t.Errorf("event = %+v", ev)
		}
		// A message from the member arrives as an event too.
		bs, err := b.groups().StreamGroupMessages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := bs.Send(&pb.SynapseMessage{ReceiverId: gid, PayloadJson: `{"text":"from b"}`}); err != nil {
			t.Fatal(err)
		}
		if bsent := recvUntil(t, bs.Recv, func(m *pb.SynapseMessage) bool { return m.GetMessageType() == "sent" || m.GetMessageType() == "error" }); bsent.GetMessageType() != "sent" {
			t.Fatalf("member's answer = %+v", bsent)
		}
		got := recvUntil(t, st.Recv, func(m *pb.SynapseMessage) bool {
			return m.GetMessageType() == string(wire.MsgGroupMessage) && m.GetSenderId() == bID
		})
		if !json.Valid([]byte(got.GetPayloadJson())) {
			t.Errorf("payload_json = %q", got.GetPayloadJson())
		}
		// Without tasks:write the stream reads but does not send.
		rs, err := a.groups().StreamGroupMessages(as(t, a.token(t, "tasks:read")))
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.Send(&pb.SynapseMessage{ReceiverId: gid, PayloadJson: `{"text":"no"}`}); err != nil {
			t.Fatal(err)
		}
		denied := recvUntil(t, rs.Recv, func(m *pb.SynapseMessage) bool { return m.GetMessageType() == "error" })
		var e wire.Error
		if err := json.Unmarshal([]byte(denied.GetErrorJson()), &e); err != nil || e.Code != wire.CodePermissionDenied {
			t.Errorf("error_json = %s", denied.GetErrorJson())
		}
	})

	t.Run("member leaves", func(t *testing.T) {
		ctx := as(t, adminToken)
		got, err := b.groups().LeaveGroup(ctx, &pb.LeaveGroupRequest{GroupId: gid})
		if err != nil {
			t.Fatalf("LeaveGroup: %v", err)
		}
		if got.GetGroupId() != gid {
			t.Errorf("LeaveGroup = %+v", got)
		}
		testutil.Eventually(t, pollTimeout, "the owner drops the member", func() bool {
			l, err := a.groups().ListGroupMembers(ctx, &pb.ListGroupMembersRequest{GroupId: gid})
			return err == nil && len(l.GetMembers()) == 1
		})
	})

	t.Run("disband", func(t *testing.T) {
		ctx := as(t, adminToken)
		_, err := a.groups().DisbandGroup(ctx, &pb.DisbandGroupRequest{GroupId: gid, AgentId: bID})
		if code, _ := codeOf(err); code != codes.PermissionDenied {
			t.Errorf("DisbandGroup as another agent = %v, want PermissionDenied", err)
		}
		got, err := a.groups().DisbandGroup(ctx, &pb.DisbandGroupRequest{GroupId: gid})
		if err != nil || !got.GetDone() || got.GetStatus() != group.StatusDisbanded {
			t.Errorf("DisbandGroup = %+v, %v", got, err)
		}
	})

	t.Run("no groups on the server", func(t *testing.T) {
		ctx := as(t, adminToken)
		n := startNode(t, "lonely", withoutGroups)
		_, err := n.groups().CreateGroup(ctx, &pb.CreateGroupRequest{Name: "x"})
		r := n.rest(t, "POST", "/group", adminToken, []byte(`{"name":"x"}`))
		code, reason := codeOf(err)
		if code != codes.Unavailable || reason != r.errorCode(t) {
			t.Errorf("CreateGroup without groups = %v (%s), REST %d %s", code, reason, r.status, r.body)
		}
	})
}

func TestHealth(t *testing.T) {
	n := startNode(t, "health")
	ctx := as(t, "")
	t.Run("HealthService", func(t *testing.T) {
		got, err := pb.NewHealthServiceClient(n.conn).HealthCheck(ctx, &emptypb.Empty{})
		if err != nil || got.GetStatus() != "SERVING" || got.GetVersion() != "test" {
			t.Errorf("HealthCheck = %+v, %v", got, err)
		}
		var rest wire.Health
		if err := json.Unmarshal(n.rest(t, "GET", "/health", "", nil).body, &rest); err != nil || rest.Status != got.GetStatus() {
			t.Errorf("REST health %+v, %v", rest, err)
		}
	})
	t.Run("grpc.health.v1", func(t *testing.T) {
		hc := grpc_health_v1.NewHealthClient(n.conn)
		for _, svc := range []string{"", "synapse.v1.TaskService", "synapse.v1.GroupService"} {
			got, err := hc.Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: svc})
			if err != nil || got.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
				t.Errorf("Check(%q) = %v, %v", svc, got.GetStatus(), err)
			}
		}
	})
	t.Run("reflection", func(t *testing.T) {
		st, err := reflectpb.NewServerReflectionClient(n.conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}); err != nil {
			t.Fatal(err)
		}
		resp, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, s := range resp.GetListServicesResponse().GetService() {
			have[s.GetName()] = true
		}
		for _, want := range []string{"synapse.v1.TaskService", "synapse.v1.SynapseMessageService", "synapse.v1.CapabilitiesService",
			"synapse.v1.GroupService", "synapse.v1.HealthService", "grpc.health.v1.Health"} {
			if !have[want] {
				t.Errorf("reflection lacks %s (has %v)", want, have)
			}
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		watch, err := grpc_health_v1.NewHealthClient(n.conn).Watch(wctx, &grpc_health_v1.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := watch.Recv(); err != nil || got.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
			t.Fatalf("Watch = %v, %v", got.GetStatus(), err)
		}
		feed, err := n.messages().ReceiveCallback(as(t, adminToken), &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := feed.Header(); err != nil { // the call is running
			t.Fatal(err)
		}
		shut := make(chan error, 1)
		go func() {
			sctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
			defer cancel()
			shut <- n.grpc.Shutdown(sctx)
		}()
		if got, err := watch.Recv(); err == nil && got.GetStatus() != grpc_health_v1.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Watch after Shutdown = %v, want NOT_SERVING", got.GetStatus())
		}
		stopWatch() // a watch lasts until its client ends it
		_, err = feed.Recv()
		if code, reason := codeOf(err); code != codes.Unavailable || reason != wire.CodeAgentNotReady {
			t.Errorf("ReceiveCallback during Shutdown = %v, want Unavailable (%s)", err, wire.CodeAgentNotReady)
		}
		if err := <-shut; err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
}
