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
		SupportGroups: d.SupportGroups, SystemId: d.SystemID, CapabilitiesJson: d.CapabilitiesJSON,
		Endpoint: d.Endpoint, PublicKey: d.PublicKey, TlsFingerprint: d.TLSFingerprint, Status: d.Status, LastSeen: d.LastSeen,
		AddedAt: d.AddedAt, ActiveTasks: int32(d.ActiveTasks), MaxTasks: int32(d.MaxTasks), CapabilitiesAt: d.CapabilitiesAt,
		DetailsJson: jsonText(d)}, nil
}

// jsonText is v as JSON text, the details_json of an answer: what REST
// answers.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
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
			Status: p.Status, Capabilities: p.Capabilities, SystemId: p.SystemID, PublicKey: p.PublicKey,
			TlsFingerprint: p.TLSFingerprint, LastSeen: p.LastSeen, AddedAt: p.AddedAt, ActiveTasks: int32(p.ActiveTasks),
			MaxTasks: int32(p.MaxTasks), CapabilitiesAt: p.CapabilitiesAt, DetailsJson: jsonText(&p)})
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
