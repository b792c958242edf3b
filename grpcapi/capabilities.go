//go:build grpc

package grpcapi

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/peer/agents"
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

// QueryAgent is GET /agents/{agent_id}: this agent, a paired peer or an
// agent of the directory, described as peer/agents describes it for
// REST too.
func (s *Server) QueryAgent(_ context.Context, in *pb.QueryAgentRequest) (*pb.CapabilitiesResponse, error) {
	if err := s.needNet(); err != nil {
		return nil, err
	}
	d, err := agents.Query(s.net, s.a.Capabilities(), in.GetAgentId())
	if err != nil {
		return nil, err
	}
	return &pb.CapabilitiesResponse{AgentId: d.AgentID, AgentName: d.AgentName, ProtocolVersion: d.ProtocolVersion,
		SupportedTaskTypes: d.SupportedTaskTypes, SupportedContentTypes: d.SupportedContentTypes, MaxFileSize: d.MaxFileSize,
		MaxConcurrentTasks: int32(d.MaxConcurrentTasks), SupportStreaming: d.SupportStreaming, SupportHil: d.SupportHiL,
		SupportGroups: d.SupportGroups, SystemId: d.SystemID, CapabilitiesJson: d.CapabilitiesJSON}, nil
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

// ListAgents is GET /agents: the paired peers, as peer/agents lists them for
// REST too.
func (s *Server) ListAgents(context.Context, *emptypb.Empty) (*pb.ListAgentsResponse, error) {
	if err := s.needNet(); err != nil {
		return nil, err
	}
	l := agents.List(s.net)
	out := &pb.ListAgentsResponse{Agents: make([]*pb.AgentInfo, 0, len(l.Agents)), Total: int32(l.Total)}
	for _, p := range l.Agents {
		out.Agents = append(out.Agents, &pb.AgentInfo{AgentId: p.AgentID, AgentName: p.AgentName, Endpoint: p.Endpoint,
			Status: p.Status, Capabilities: p.Capabilities})
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
