package httpapi

import (
	"context"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/group"
	"github.com/synapse-edge/synapse/wire"
)

// Group routes (SPEC §10; seed 003 §3.1 rows 14-19 and more), served when
// Options.Groups is set. The caller acts as this agent: the group roles
// checked are this agent's.
//
//	POST /group                          {"name","description","initial_members"} → 201 group
//	GET  /groups                         {"groups":[...]}
//	GET  /group/{id}                     the group as this agent knows it
//	POST /group/{id}/invite              {"agent_id","role","weight"} → 201 (202 from an admin's agent)
//	POST /group/{id}/join                → 202 (sent to the owner's agent), 200 if a member already
//	POST /group/{id}/leave               {"agent_id"?} → 200 (202 for a removal sent to the owner)
//	POST /group/{id}/disband             → 200 (202 from an admin's agent); 403 for other members
//	GET  /group/{id}/members             {"group_id","members":[...]}
//	GET  /group/{id}/messages            ?after=&limit= → {"events":[...],"last_seq"}
//	GET  /group/{id}/messages/stream     WebSocket of the group's events (below)
//	POST /group/{id}/message             {"text","body"} → 201 message
//	POST /group/{id}/vote                {"title","options","consensus","quorum","deadline_seconds"} → 201 (202 from a member's agent)
//	GET  /group/{id}/votes               {"votes":[...]}
//	GET  /group/{id}/vote/{vote_id}      the vote, with its result once closed
//	POST /group/{id}/vote/{vote_id}/ballot {"option"} or {"ranking":[...]} → 200 (202 from a member's agent)
//	POST /group/{id}/task                ?wait=S; {"task_type","payload","mode","split_field","aggregate","members","timeout_seconds"} → 201, 200 when final within S, 202 from a member's agent
//	GET  /group/{id}/task/{task_id}      the group task with its parts and aggregate
//
// A 202 means the request was checked against this agent's copy of the
// group and sent to the owner's agent (the body is this agent's record of
// it); the outcome arrives as an announcement. Reading needs tasks:read,
// changing tasks:write. POSTs that create something honour
// Idempotency-Key; POST /group also the body's idempotency_key.
func (g groupAPI) routes() []route {
	r, w := auth.ScopeTasksRead, auth.ScopeTasksWrite
	return []route{
		{"POST", seg("group"), w, withGroupBody(g, g.create)},
		{"GET", seg("groups"), r, g.with(g.list)},
		{"GET", seg("group/*"), r, g.with(g.get)},
		{"POST", seg("group/*/invite"), w, withGroupBody(g, g.invite)},
		{"POST", seg("group/*/join"), w, g.withMember(g.join)},
		{"POST", seg("group/*/leave"), w, g.withMember(g.leave)},
		{"POST", seg("group/*/disband"), w, g.withMember(g.disband)},
		{"GET", seg("group/*/members"), r, g.with(g.members)},
		{"GET", seg("group/*/messages"), r, g.with(g.events)},
		{"GET", seg("group/*/messages/stream"), r, g.with(g.stream)},
		{"POST", seg("group/*/message"), w, withGroupBody(g, g.message)},
		{"POST", seg("group/*/vote"), w, withGroupBody(g, g.openVote)},
		{"GET", seg("group/*/votes"), r, g.with(g.votes)},
		{"GET", seg("group/*/vote/*"), r, g.with(g.vote)},
		{"POST", seg("group/*/vote/*/ballot"), w, withGroupBody(g, g.cast)},
		{"POST", seg("group/*/task"), w, g.with(g.task)},
		{"GET", seg("group/*/task/*"), r, g.with(g.getTask)},
	}
}

// groupAPI serves the group routes: what they need of the server is the
// group manager, the agent (its identity, idempotency keys) and the
// streams.
type groupAPI struct {
	groups  *group.Manager // nil: the routes answer 503
	a       *agent.Agent
	streams *streamer
}

// groupHandler is the body of a group route: args are the path
// arguments, unescaped.
type groupHandler func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error

// with is the prologue of every group route: groups must run, and the
// path arguments are unescaped.
func (g groupAPI) with(h groupHandler) handlerFunc {
	return func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
		if g.groups == nil {
			return wire.Errorf(wire.CodeAgentNotReady, "groups are not running on this server")
		}
		a := make([]string, len(args))
		for i, arg := range args {
			v, err := pathArg(arg, "id")
			if err != nil {
				return err
			}
			a[i] = v
		}
		return h(ctx, p, a)
	}
}

// withGroupBody is with, then the request body decoded into a T.
func withGroupBody[T any](g groupAPI, h func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string, req *T) error) handlerFunc {
	return g.with(func(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
		var req T
		if err := decode(ctx, &req); err != nil {
			return err
		}
		return h(ctx, p, args, &req)
	})
}

// withMember is with, then the optional body of join, leave and disband.
func (g groupAPI) withMember(h func(ctx *fasthttp.RequestCtx, id string, b memberBody) error) handlerFunc {
	return g.with(func(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
		b, err := decodeMemberBody(ctx, args[0])
		if err != nil {
			return err
		}
		return h(ctx, args[0], b)
	})
}

// created answers 201 when done here, 202 when sent to the owner's agent.
func created(done bool) int {
	if done {
		return fasthttp.StatusCreated
	}
	return fasthttp.StatusAccepted
}

// changed answers 200 when done here, 202 when sent to the owner's agent.
func changed(done bool) int {
	if done {
		return fasthttp.StatusOK
	}
	return fasthttp.StatusAccepted
}

func (g groupAPI) create(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string, req *group.CreateRequest) error {
	return idempotent(ctx, g.a, p, req.IdempotencyKey, func() (int, any, error) {
		gr, err := g.groups.Create(ctx, *req)
		if err != nil {
			return 0, nil, err
		}
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/group/"+url.PathEscape(gr.GroupID))
		return fasthttp.StatusCreated, gr, nil
	})
}

func (g groupAPI) list(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	list, err := g.groups.Groups()
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"groups": list})
	return nil
}

func (g groupAPI) get(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gr, err := g.groups.Group(args[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, gr)
	return nil
}

func (g groupAPI) invite(ctx *fasthttp.RequestCtx, p auth.Principal, args []string, req *group.InviteRequest) error {
	return idempotent(ctx, g.a, p, "", func() (int, any, error) {
		gr, done, err := g.groups.Invite(ctx, args[0], *req)
		return created(done), gr, err
	})
}

// memberBody is the optional body of join, leave and disband (seed 003
// JoinGroupRequest and the like).
type memberBody struct {
	GroupID string `json:"group_id,omitempty" msgpack:"group_id,omitempty"`
	AgentID string `json:"agent_id,omitempty" msgpack:"agent_id,omitempty"`
}

func decodeMemberBody(ctx *fasthttp.RequestCtx, groupID string) (memberBody, error) {
	var b memberBody
	if len(ctx.PostBody()) > 0 {
		if err := decode(ctx, &b); err != nil {
			return b, err
		}
	}
	if b.GroupID != "" && b.GroupID != groupID {
		return b, wire.Errorf(wire.CodeInvalidParams, "group_id in the body is not the one in the path").With("field", "group_id")
	}
	return b, nil
}

func (g groupAPI) join(ctx *fasthttp.RequestCtx, id string, b memberBody) error {
	gr, err := g.groups.Join(ctx, id, b.AgentID)
	if err != nil {
		return err
	}
	write(ctx, changed(gr.Standing == group.StandingMember), gr)
	return nil
}

func (g groupAPI) leave(ctx *fasthttp.RequestCtx, id string, b memberBody) error {
	gr, done, err := g.groups.Leave(ctx, id, b.AgentID)
	if err != nil {
		return err
	}
	write(ctx, changed(done), gr)
	return nil
}

func (g groupAPI) disband(ctx *fasthttp.RequestCtx, id string, b memberBody) error {
	if self := g.a.Identity().AgentID; b.AgentID != "" && b.AgentID != self {
		return wire.Errorf(wire.CodePermissionDenied, "this agent disbands as itself (%s), not as %s", self, b.AgentID)
	}
	gr, done, err := g.groups.Disband(ctx, id)
	if err != nil {
		return err
	}
	write(ctx, changed(done), gr)
	return nil
}

func (g groupAPI) members(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	list, err := g.groups.Members(args[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"group_id": args[0], "members": list})
	return nil
}

// afterSeq reads ?after=, an event seq; def when absent.
func afterSeq(ctx *fasthttp.RequestCtx, def uint64) (uint64, error) {
	raw := ctx.QueryArgs().Peek("after")
	if len(raw) == 0 {
		return def, nil
	}
	n, ok := parseUint(raw)
	if !ok {
		return 0, wire.Errorf(wire.CodeInvalidParams, "after must be an event seq (a whole number)").With("field", "after")
	}
	return n, nil
}

func (g groupAPI) events(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	limit, err := queryInt(ctx, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	after, err := afterSeq(ctx, 0)
	if err != nil {
		return err
	}
	evs, err := g.groups.Events(args[0], after, limit)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"events": evs, "last_seq": g.groups.LastEvent(args[0])})
	return nil
}

func (g groupAPI) message(ctx *fasthttp.RequestCtx, p auth.Principal, args []string, req *group.MessageRequest) error {
	return idempotent(ctx, g.a, p, "", func() (int, any, error) {
		msg, err := g.groups.Send(ctx, args[0], *req)
		return fasthttp.StatusCreated, msg, err
	})
}

func (g groupAPI) openVote(ctx *fasthttp.RequestCtx, p auth.Principal, args []string, req *group.VoteRequest) error {
	return idempotent(ctx, g.a, p, "", func() (int, any, error) {
		v, opened, err := g.groups.OpenVote(ctx, args[0], *req)
		if err == nil {
			ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/group/"+url.PathEscape(args[0])+"/vote/"+url.PathEscape(v.VoteID))
		}
		return created(opened), v, err
	})
}

func (g groupAPI) votes(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	list, err := g.groups.Votes(args[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"votes": list})
	return nil
}

func (g groupAPI) vote(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	v, err := g.groups.Vote(args[0], args[1])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, v)
	return nil
}

func (g groupAPI) cast(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string, req *group.BallotRequest) error {
	v, counted, err := g.groups.Cast(ctx, args[0], args[1], *req)
	if err != nil {
		return err
	}
	write(ctx, changed(counted), v)
	return nil
}

// task reads ?wait= before the body, so it decodes the body itself.
func (g groupAPI) task(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	wait, err := queryInt(ctx, "wait", 0, 0, maxWait)
	if err != nil {
		return err
	}
	var req group.TaskRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return idempotent(ctx, g.a, p, "", func() (int, any, error) {
		t, started, err := g.groups.RunTask(ctx, args[0], req)
		if err != nil {
			return 0, nil, err
		}
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/group/"+url.PathEscape(args[0])+"/task/"+url.PathEscape(t.TaskID))
		if !started {
			return fasthttp.StatusAccepted, t, nil
		}
		if wait > 0 {
			wctx, cancel := context.WithCancel(g.streams.bg)
			defer cancel()
			if f, err := g.groups.WaitTask(wctx, args[0], t.TaskID, time.Duration(wait)*time.Second); err == nil {
				t = f
			}
			if t.Status != group.TaskRunning {
				return fasthttp.StatusOK, t, nil
			}
		}
		return fasthttp.StatusCreated, t, nil
	})
}

func (g groupAPI) getTask(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	t, err := g.groups.Task(args[0], args[1])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, t)
	return nil
}
