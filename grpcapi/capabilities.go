//go:build grpc

package grpcapi

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/types/known/emptypb"

	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// GetCapabilities is GET /capabilities.
func (s *Server) GetCapabilities(ctx context.Context, _ *emptypb.Empty) (*pb.CapabilitiesResponse, error) {
	c, err := s.a.GetCapabilities(ctx)
	if err != nil {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "capabilities: %v", err)
	}
	return capabilitiesResponse(c), nil
}

// QueryAgent describes an agent: this one (its capabilities), one in
// this agent's registry directory (the capabilities it registered), or a
// paired peer (GET /agents/{agent_id}: what pairing learnt). NotFound
// otherwise.
func (s *Server) QueryAgent(ctx context.Context, in *pb.QueryAgentRequest) (*pb.CapabilitiesResponse, error) {
	if err := s.needNet(); err != nil {
		return nil, err
	}
	id := in.GetAgentId()
	if id == "" {
		return nil, wire.Errorf(wire.CodeInvalidParams, "agent_id is required").With("field", "agent_id")
	}
	if id == s.a.Identity().AgentID {
		return s.GetCapabilities(ctx, nil)
	}
	if e, err := s.net.Registration(id); err == nil && e.Capabilities != nil {
		return capabilitiesResponse(e.Capabilities), nil
	}
	p, err := s.net.Peer(id)
	if err != nil {
		return nil, err
	}
	return &pb.CapabilitiesResponse{AgentId: p.AgentID, AgentName: p.AgentName, SystemId: p.SystemID,
		MaxConcurrentTasks: int32(p.MaxTasks)}, nil
}

func capabilitiesResponse(c *wire.AgentCapabilities) *pb.CapabilitiesResponse {
	out := &pb.CapabilitiesResponse{AgentId: c.AgentID, AgentName: c.AgentName, ProtocolVersion: c.ProtocolVersion,
		SupportedContentTypes: c.SupportedContentTypes, MaxFileSize: c.MaxFileSize, MaxConcurrentTasks: int32(c.MaxConcurrentTasks),
		SupportStreaming: c.SupportStreaming, SupportHil: c.SupportHiL, SupportGroups: c.SupportGroups, SystemId: c.SystemID}
	for _, t := range c.SupportedTaskTypes {
		out.SupportedTaskTypes = append(out.SupportedTaskTypes, t.Type)
	}
	if b, err := json.Marshal(c); err == nil {
		out.CapabilitiesJson = string(b)
	}
	return out
}

// ListAgents is GET /agents: the paired peers.
func (s *Server) ListAgents(context.Context, *emptypb.Empty) (*pb.ListAgentsResponse, error) {
	if err := s.needNet(); err != nil {
		return nil, err
	}
	peers := s.net.Peers()
	out := &pb.ListAgentsResponse{Agents: make([]*pb.AgentInfo, 0, len(peers)), Total: int32(len(peers))}
	for _, p := range peers {
		info := &pb.AgentInfo{AgentId: p.AgentID, AgentName: p.AgentName, Endpoint: p.Endpoint, Status: p.Status}
		if e, err := s.net.Registration(p.AgentID); err == nil && e.Capabilities != nil {
			for _, t := range e.Capabilities.SupportedTaskTypes {
				info.Capabilities = append(info.Capabilities, t.Type)
			}
		}
		out.Agents = append(out.Agents, info)
	}
	return out, nil
}

// HealthCheck is GET /health.
func (s *Server) HealthCheck(context.Context, *emptypb.Empty) (*pb.HealthCheckResponse, error) {
	st := "SERVING"
	select {
	case <-s.done:
		st = "NOT_SERVING"
	default:
		if s.a.Serving() != nil {
			st = "NOT_SERVING" // shutting down, or the store cannot commit
		}
	}
	return &pb.HealthCheckResponse{Status: st, Version: s.version, UptimeSeconds: int64(s.a.Uptime().Seconds())}, nil
}
