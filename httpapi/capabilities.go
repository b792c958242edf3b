package httpapi

import (
	"errors"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// Capability and discovery routes (seed 000):
//
//	GET    /capabilities                  AgentCapabilities (public)
//	GET    /capabilities/interfaces       {"agent_id","protocol_version","interfaces"} (public)
//	GET    /capabilities/task-types/{t}   SupportedTaskType; 403 capability_lacking
//	GET    /agents/{agent_id}/compliance  ComplianceEvaluation of "self" or a paired peer
//	POST   /registry/agents               a signed registration envelope (registry:write)
//	GET    /registry/agents               the directory, ?capability=&task_type=&status=
//	GET    /registry/agents/{agent_id}    one entry
//	DELETE /registry/agents/{agent_id}    forget an entry and its pinned key (admin)
//
// GET /agents with capability, task_type or status in the query answers
// from the directory too (FindByCapability); without them it lists the
// paired peers.
func (s *Server) discoveryRoutes() []route {
	return append([]route{
		{"GET", seg("capabilities/interfaces"), "", s.interfaces},
	}, withNet(s.net, []route{
		{"GET", seg("agents/*/compliance"), auth.ScopeTasksRead, s.compliance},
		{"POST", seg("registry/agents"), auth.ScopeRegistryWrite, s.register},
		{"GET", seg("registry/agents"), auth.ScopeTasksRead, s.listDirectory},
		{"GET", seg("registry/agents/*"), auth.ScopeTasksRead, s.getRegistration},
		{"DELETE", seg("registry/agents/*"), auth.ScopeAdmin, s.unregister},
	})...)
}

// serverInterfaces ties the standard interfaces this server implements to
// what it serves: a route (method and pattern) or, for the authenticator,
// any route that needs a token.
var serverInterfaces = []struct {
	name   string
	method string
	path   string // a pattern of the route table
}{
	{wire.IfaceMultipartTransport, "POST", "task/multipart"},
	{wire.IfaceStreamingTransport, "GET", "task/*/stream"},
	{wire.IfaceStreamingTransport, "GET", "messages/stream"},
	// Submitting a task is where Idempotency-Key is honoured (tasks.go).
	{wire.IfaceIdempotencyHandler, "POST", "task"},
}

// provideInterfaces declares to the agent the standard interfaces this
// server implements, from its route table.
func (s *Server) provideInterfaces() {
	names := []string{wire.IfaceHTTPTransport}
	for _, r := range s.table {
		if r.scope != "" && !slices.Contains(names, wire.IfaceAuthenticator) {
			names = append(names, wire.IfaceAuthenticator)
		}
		for _, si := range serverInterfaces {
			if r.method == si.method && slices.Equal(r.pattern, seg(si.path)) && !slices.Contains(names, si.name) {
				names = append(names, si.name)
			}
		}
	}
	if err := s.a.ProvideInterfaces(names...); err != nil {
		s.log.Error("declare interfaces", "err", err)
	}
}

func (s *Server) capabilities(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	c, err := s.a.GetCapabilities(ctx)
	if err != nil {
		return wire.Errorf(wire.CodeAgentNotReady, "capabilities: %v", err)
	}
	write(ctx, fasthttp.StatusOK, c)
	return nil
}

func (s *Server) interfaces(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	write(ctx, fasthttp.StatusOK, s.a.Interfaces())
	return nil
}

// taskTypeCapability serves GET /capabilities/task-types/{type}: an
// unsupported type is refused (403, seed 004 §7) with capability_lacking.
func (s *Server) taskTypeCapability(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	typ, err := pathArg(args[0], "task type")
	if err != nil {
		return err
	}
	t, err := s.a.GetTaskTypeCapabilities(typ)
	if errors.Is(err, agent.ErrTaskTypeUnsupported) {
		// Seed 004 §7: capability_lacking is 403, the registry's status.
		return wire.Errorf(wire.CodeCapabilityLacking, "task type %q is not supported", typ).With("task_type", typ)
	}
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, t)
	return nil
}

func (s *Server) compliance(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	ev, err := s.net.Pairing().Compliance(ctx, id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, ev)
	return nil
}
