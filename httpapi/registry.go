package httpapi

import (
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/registry"
	"github.com/synapse-edge/synapse/wire"
)

// register serves POST /registry/agents: one registration envelope (JSON,
// or msgpack with Content-Type: application/msgpack). 201 for the first
// registration of an agent, 200 for a renewal.
func (s *Server) register(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	c, err := requestCodec(ctx)
	if err != nil {
		return err
	}
	body := ctx.PostBody()
	if len(body) == 0 {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "the request body is empty: send one %s envelope", wire.MsgRegistryRegister)
	}
	m, err := wire.DecodeEnvelope(body, c == wire.Msgpack)
	if err != nil {
		return err
	}
	ans, err := s.net.Directory().Register(ctx, m)
	if err != nil {
		return err
	}
	status := fasthttp.StatusOK
	if ans.Created {
		status = fasthttp.StatusCreated
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/registry/agents/"+url.PathEscape(ans.AgentID))
	}
	write(ctx, status, ans)
	return nil
}

// directoryQuery reads capability, task_type and status from the query;
// ok is false when none of them is there.
func directoryQuery(ctx *fasthttp.RequestCtx) (q peer.DirectoryQuery, ok bool) {
	args := ctx.QueryArgs()
	q = peer.DirectoryQuery{Capability: string(args.Peek("capability")), TaskType: string(args.Peek("task_type")),
		Status: string(args.Peek("status"))}
	return q, args.Has("capability") || args.Has("task_type") || args.Has("status")
}

// findAgents answers FindByCapability as seed 003's ListAgentsResponse,
// {"agents":[...],"total":n}, like GET /agents.
func (s *Server) findAgents(ctx *fasthttp.RequestCtx, q peer.DirectoryQuery) error {
	list, err := s.net.Directory().FindByCapability(q)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, registry.Listing(list))
	return nil
}

func (s *Server) listDirectory(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	q, _ := directoryQuery(ctx)
	return s.findAgents(ctx, q)
}

func (s *Server) getRegistration(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	e, err := s.net.Directory().Registration(id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, e)
	return nil
}

func (s *Server) unregister(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	if err := s.net.Directory().Unregister(ctx, id); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
