//go:build grpc

package grpcapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/group"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// groupPage is how many stored events one catch-up read takes.
const groupPage = 1000

// manager checks that groups run, like the REST group routes, and that
// a group is named.
func (s *Server) manager(groupID string) (*group.Manager, error) {
	gm, err := s.running()
	if err != nil {
		return nil, err
	}
	if groupID == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "group_id is required").With("field", "group_id")
	}
	return gm, nil
}

func (s *Server) running() (*group.Manager, error) {
	if s.groups == nil {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "groups are not running on this server")
	}
	return s.groups, nil
}

func groupJSON(g *group.Group) string {
	b, err := json.Marshal(g)
	if err != nil {
		return ""
	}
	return string(b)
}

// CreateGroup is POST /group. With idempotency_key (seed 003 §5.3) a
// repeated request answers the first response and creates nothing, a
// different request with the key is idempotency_key_reused, and one that
// arrives while the first is still being answered is
// idempotency_key_in_flight; keys are scoped by token and kept 24 h, as
// for SubmitTask.
func (s *Server) CreateGroup(ctx context.Context, in *pb.CreateGroupRequest) (*pb.CreateGroupResponse, error) {
	gm, err := s.running()
	if err != nil {
		return nil, err
	}
	create := func() (*pb.CreateGroupResponse, error) {
		g, err := gm.Create(ctx, group.CreateRequest{Name: in.GetName(), Description: in.GetDescription(), InitialMembers: in.GetInitialMembers()})
		if err != nil {
			return nil, err
		}
		return &pb.CreateGroupResponse{GroupId: g.GroupID, Status: g.Status, GroupJson: groupJSON(g)}, nil
	}
	key := in.GetIdempotencyKey()
	if key == "" {
		return create()
	}
	r, err := idemRequest(ctx, key, in)
	if err != nil {
		return nil, err
	}
	var fresh *pb.CreateGroupResponse
	ans, _, err := s.a.Idempotent(ctx, r, func() (*agent.IdemAnswer, error) {
		resp, err := create()
		if err != nil {
			return nil, err
		}
		fresh = resp
		body, err := proto.Marshal(resp)
		if err != nil {
			return nil, wire.Errorf(wire.CodeInternal, "encode response: %v", err)
		}
		return &agent.IdemAnswer{Status: 201, ContentType: "application/protobuf", Body: body}, nil
	})
	if err != nil || fresh != nil {
		return fresh, err
	}
	var out pb.CreateGroupResponse
	if err := proto.Unmarshal(ans.Body, &out); err != nil {
		return nil, wire.Errorf(wire.CodeSysStorage, "idempotency record: %v", err)
	}
	return &out, nil
}

// JoinGroup is POST /group/{id}/join; done is false when the join was
// sent to the owner's agent (REST 202).
func (s *Server) JoinGroup(ctx context.Context, in *pb.JoinGroupRequest) (*pb.JoinGroupResponse, error) {
	gm, err := s.manager(in.GetGroupId())
	if err != nil {
		return nil, err
	}
	g, err := gm.Join(ctx, in.GetGroupId(), in.GetAgentId())
	if err != nil {
		return nil, err
	}
	return &pb.JoinGroupResponse{GroupId: g.GroupID, Standing: g.Standing, Done: g.Standing == group.StandingMember, GroupJson: groupJSON(g)}, nil
}

// LeaveGroup is POST /group/{id}/leave.
func (s *Server) LeaveGroup(ctx context.Context, in *pb.LeaveGroupRequest) (*pb.LeaveGroupResponse, error) {
	gm, err := s.manager(in.GetGroupId())
	if err != nil {
		return nil, err
	}
	g, done, err := gm.Leave(ctx, in.GetGroupId(), in.GetAgentId())
	if err != nil {
		return nil, err
	}
	return &pb.LeaveGroupResponse{GroupId: g.GroupID, Standing: g.Standing, Done: done, GroupJson: groupJSON(g)}, nil
}

// DisbandGroup is POST /group/{id}/disband; this agent disbands as itself.
func (s *Server) DisbandGroup(ctx context.Context, in *pb.DisbandGroupRequest) (*pb.DisbandGroupResponse, error) {
	gm, err := s.manager(in.GetGroupId())
	if err != nil {
		return nil, err
	}
	if id, me := in.GetAgentId(), s.a.Identity().AgentID; id != "" && id != me {
		return nil, wire.Errorf(wire.CodePermissionDenied, "this agent disbands as itself (%s), not as %s", me, id)
	}
	g, done, err := gm.Disband(ctx, in.GetGroupId())
	if err != nil {
		return nil, err
	}
	return &pb.DisbandGroupResponse{GroupId: g.GroupID, Status: g.Status, Done: done, GroupJson: groupJSON(g)}, nil
}

// ListGroupMembers is GET /group/{id}/members.
func (s *Server) ListGroupMembers(_ context.Context, in *pb.ListGroupMembersRequest) (*pb.ListGroupMembersResponse, error) {
	gm, err := s.manager(in.GetGroupId())
	if err != nil {
		return nil, err
	}
	list, err := gm.Members(in.GetGroupId())
	if err != nil {
		return nil, err
	}
	out := &pb.ListGroupMembersResponse{GroupId: in.GetGroupId(), Members: make([]*pb.GroupMember, 0, len(list))}
	for _, m := range list {
		out.Members = append(out.Members, &pb.GroupMember{AgentId: m.AgentID, Role: string(m.Role),
			JoinedAt: wire.FormatTime(m.JoinedAt.Time), Weight: m.Weight, TaskTypes: m.TaskTypes})
	}
	return out, nil
}

// StreamGroupMessages is GET /group/{id}/messages/stream. The first
// message names the group in receiver_id; its seq, if above 0, replays
// the kept events after that seq (else only new events come). Every
// message with a payload_json {"text","body"} (the first one too) is sent
// to the group as from this agent (needs tasks:write) and answered with
// message_type "sent" and the message as payload_json, or "error" with
// error_json. The group's events come as messages whose id is the event
// id, message_type the event type, sender_id who it is from, seq its
// seq and payload_json its payload.
func (s *Server) StreamGroupMessages(stream pb.GroupService_StreamGroupMessagesServer) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return wire.Errorf(wire.CodeInvalidParams, "send a first message naming the group in receiver_id")
		}
		return err
	}
	id := first.GetReceiverId()
	gm, err := s.manager(id)
	if err != nil {
		return err
	}
	if _, err := gm.Group(id); err != nil {
		return err
	}
	after := gm.LastEvent(id)
	if first.GetSeq() > 0 {
		after = first.GetSeq()
	}
	// The headers tell the client that the events after `after` come.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(stream.Context())
	var mu sync.Mutex
	send := func(m *pb.SynapseMessage) error {
		mu.Lock()
		defer mu.Unlock()
		return stream.Send(m)
	}
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = s.pumpGroup(ctx, gm, id, after, send)
	}()
	canSend := principal(ctx).Can(auth.ScopeTasksWrite)
	in := first
	for range maxStreamMessages {
		if in.GetPayloadJson() != "" {
			if err := send(s.groupSend(ctx, gm, id, canSend, in)); err != nil {
				return err
			}
		}
		in, err = stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return wire.Errorf(wire.CodeRateLimited, "one stream carries at most %d messages", maxStreamMessages)
}

// groupSend sends one message of the stream to the group.
func (s *Server) groupSend(ctx context.Context, gm *group.Manager, id string, canSend bool, in *pb.SynapseMessage) *pb.SynapseMessage {
	fail := func(err error) *pb.SynapseMessage {
		b, _ := json.Marshal(wire.AsError(err))
		return &pb.SynapseMessage{CorrelationId: in.GetId(), ReceiverId: id, MessageType: "error", ErrorJson: string(b),
			Timestamp: s.a.Clock().Now().UnixMilli()}
	}
	if !canSend {
		return fail(wire.Errorf(wire.CodePermissionDenied, "sending to a group needs the tasks:write scope"))
	}
	var req group.MessageRequest
	if err := json.Unmarshal([]byte(in.GetPayloadJson()), &req); err != nil {
		return fail(wire.Errorf(wire.CodeMessageFormatInvalid, "payload_json: send {\"text\":...} or {\"body\":{...}}: %v", err))
	}
	msg, err := gm.Send(ctx, id, req)
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fail(wire.Errorf(wire.CodeInternal, "encode answer: %v", err))
	}
	return &pb.SynapseMessage{Id: msg.MessageID, CorrelationId: in.GetId(), SenderId: msg.From, ReceiverId: id,
		MessageType: "sent", ContentType: "json", PayloadJson: string(b), Timestamp: msg.SentAt.UnixMilli()}
}

// pumpGroup sends the group's events after last until ctx ends, the
// server shuts down or the manager closes; a lagging subscription is
// caught up from the store.
func (s *Server) pumpGroup(ctx context.Context, gm *group.Manager, id string, last uint64, send func(*pb.SynapseMessage) error) error {
	event := func(ev group.Event) *pb.SynapseMessage {
		return &pb.SynapseMessage{Id: ev.EventID, SenderId: ev.From, ReceiverId: ev.GroupID, MessageType: string(ev.Type),
			ContentType: "json", PayloadJson: string(ev.Payload), Timestamp: ev.At.UnixMilli(), Seq: ev.Seq}
	}
	for range maxResubscribe {
		sub := gm.Subscribe(id)
		for range groupPage {
			evs, err := gm.Events(id, last, groupPage)
			if err != nil {
				sub.Close()
				return err
			}
			for _, ev := range evs {
				if err := send(event(ev)); err != nil {
					sub.Close()
					return err
				}
				last = ev.Seq
			}
			if len(evs) < groupPage {
				break
			}
		}
		lagged, err := s.followGroup(ctx, sub, &last, func(ev group.Event) error { return send(event(ev)) })
		sub.Close()
		if !lagged {
			return err
		}
	}
	return wire.Errorf(wire.CodeInternal, "group stream resubscribed too often")
}

func (s *Server) followGroup(ctx context.Context, sub *group.Subscription, last *uint64, send func(group.Event) error) (bool, error) {
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return sub.Lagged(), nil
			}
			if ev.Seq <= *last {
				continue
			}
			if err := send(ev); err != nil {
				return false, err
			}
			*last = ev.Seq
		case <-ctx.Done():
			return false, nil
		case <-s.done:
			return false, nil
		}
	}
}
