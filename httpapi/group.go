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
func (s *Server) groupRoutes() []route {
	r, w := auth.ScopeTasksRead, auth.ScopeTasksWrite
	return []route{
		{"POST", seg("group"), w, s.createGroup},
		{"GET", seg("groups"), r, s.listGroups},
		{"GET", seg("group/*"), r, s.getGroup},
		{"POST", seg("group/*/invite"), w, s.inviteGroup},
		{"POST", seg("group/*/join"), w, s.joinGroup},
		{"POST", seg("group/*/leave"), w, s.leaveGroup},
		{"POST", seg("group/*/disband"), w, s.disbandGroup},
		{"GET", seg("group/*/members"), r, s.groupMembers},
		{"GET", seg("group/*/messages"), r, s.groupEvents},
		{"GET", seg("group/*/messages/stream"), r, s.groupStream},
		{"POST", seg("group/*/message"), w, s.groupMessage},
		{"POST", seg("group/*/vote"), w, s.openVote},
		{"GET", seg("group/*/votes"), r, s.listVotes},
		{"GET", seg("group/*/vote/*"), r, s.getVote},
		{"POST", seg("group/*/vote/*/ballot"), w, s.castBallot},
		{"POST", seg("group/*/task"), w, s.groupTask},
		{"GET", seg("group/*/task/*"), r, s.getGroupTask},
	}
}

// groupArgs checks that groups run and unescapes the path arguments.
func (s *Server) groupArgs(args []string) (*group.Manager, []string, error) {
	if s.groups == nil {
		return nil, nil, wire.Errorf(wire.CodeAgentNotReady, "groups are not running on this server")
	}
	out := make([]string, len(args))
	for i, a := range args {
		v, err := pathArg(a, "id")
		if err != nil {
			return nil, nil, err
		}
		out[i] = v
	}
	return s.groups, out, nil
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

// idempotent runs a creating request under its Idempotency-Key, if any:
// a repeated request replays the first answer (agent.Idempotent: the
// record is stored after the request succeeded, in a transaction of its
// own).
func (s *Server) idempotent(ctx *fasthttp.RequestCtx, p auth.Principal, run func() (int, any, error)) error {
	return s.idempotentKey(ctx, p, "", run)
}

// idempotentKey is idempotent with the body's idempotency_key field as the
// key when the header is absent (seed 003 §5.3; the header wins).
func (s *Server) idempotentKey(ctx *fasthttp.RequestCtx, p auth.Principal, bodyKey string, run func() (int, any, error)) error {
	key := idemKey(ctx, bodyKey)
	if key == "" {
		status, v, err := run()
		if err == nil {
			write(ctx, status, v)
		}
		return err
	}
	ans, replayed, err := s.a.Idempotent(ctx, idemRequest(ctx, p, key), func() (*agent.IdemAnswer, error) {
		status, v, err := run()
		if err != nil {
			return nil, err
		}
		return encodeAnswer(ctx, status, v)
	})
	if err != nil {
		return err
	}
	writeAnswer(ctx, ans, replayed)
	return nil
}

func (s *Server) createGroup(ctx *fasthttp.RequestCtx, p auth.Principal, _ []string) error {
	gm, _, err := s.groupArgs(nil)
	if err != nil {
		return err
	}
	var req group.CreateRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return s.idempotentKey(ctx, p, req.IdempotencyKey, func() (int, any, error) {
		g, err := gm.Create(ctx, req)
		if err != nil {
			return 0, nil, err
		}
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/group/"+url.PathEscape(g.GroupID))
		return fasthttp.StatusCreated, g, nil
	})
}

func (s *Server) listGroups(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	gm, _, err := s.groupArgs(nil)
	if err != nil {
		return err
	}
	list, err := gm.Groups()
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"groups": list})
	return nil
}

func (s *Server) getGroup(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	g, err := gm.Group(a[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, g)
	return nil
}

func (s *Server) inviteGroup(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	var req group.InviteRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return s.idempotent(ctx, p, func() (int, any, error) {
		g, done, err := gm.Invite(ctx, a[0], req)
		return created(done), g, err
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

func (s *Server) joinGroup(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	b, err := decodeMemberBody(ctx, a[0])
	if err != nil {
		return err
	}
	g, err := gm.Join(ctx, a[0], b.AgentID)
	if err != nil {
		return err
	}
	write(ctx, changed(g.Standing == group.StandingMember), g)
	return nil
}

func (s *Server) leaveGroup(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	b, err := decodeMemberBody(ctx, a[0])
	if err != nil {
		return err
	}
	g, done, err := gm.Leave(ctx, a[0], b.AgentID)
	if err != nil {
		return err
	}
	write(ctx, changed(done), g)
	return nil
}

func (s *Server) disbandGroup(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	b, err := decodeMemberBody(ctx, a[0])
	if err != nil {
		return err
	}
	if b.AgentID != "" && b.AgentID != s.a.Identity().AgentID {
		return wire.Errorf(wire.CodePermissionDenied, "this agent disbands as itself (%s), not as %s", s.a.Identity().AgentID, b.AgentID)
	}
	g, done, err := gm.Disband(ctx, a[0])
	if err != nil {
		return err
	}
	write(ctx, changed(done), g)
	return nil
}

func (s *Server) groupMembers(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	list, err := gm.Members(a[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"group_id": a[0], "members": list})
	return nil
}

func (s *Server) groupEvents(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	limit, err := queryInt(ctx, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	var after uint64
	if raw := ctx.QueryArgs().Peek("after"); len(raw) > 0 {
		n, ok := parseUint(raw)
		if !ok {
			return wire.Errorf(wire.CodeInvalidParams, "after must be an event seq (a whole number)").With("field", "after")
		}
		after = n
	}
	evs, err := gm.Events(a[0], after, limit)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"events": evs, "last_seq": gm.LastEvent(a[0])})
	return nil
}

func (s *Server) groupMessage(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	var req group.MessageRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return s.idempotent(ctx, p, func() (int, any, error) {
		msg, err := gm.Send(ctx, a[0], req)
		return fasthttp.StatusCreated, msg, err
	})
}

func (s *Server) openVote(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	var req group.VoteRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return s.idempotent(ctx, p, func() (int, any, error) {
		v, opened, err := gm.OpenVote(ctx, a[0], req)
		if err == nil {
			ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/group/"+url.PathEscape(a[0])+"/vote/"+url.PathEscape(v.VoteID))
		}
		return created(opened), v, err
	})
}

func (s *Server) listVotes(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	list, err := gm.Votes(a[0])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"votes": list})
	return nil
}

func (s *Server) getVote(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	v, err := gm.Vote(a[0], a[1])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, v)
	return nil
}

func (s *Server) castBallot(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	var req group.BallotRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	v, counted, err := gm.Cast(ctx, a[0], a[1], req)
	if err != nil {
		return err
	}
	write(ctx, changed(counted), v)
	return nil
}

func (s *Server) groupTask(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	wait, err := queryInt(ctx, "wait", 0, 0, maxWait)
	if err != nil {
		return err
	}
	var req group.TaskRequest
	if err := decode(ctx, &req); err != nil {
		return err
	}
	return s.idempotent(ctx, p, func() (int, any, error) {
		t, started, err := gm.RunTask(ctx, a[0], req)
		if err != nil {
			return 0, nil, err
		}
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/group/"+url.PathEscape(a[0])+"/task/"+url.PathEscape(t.TaskID))
		if !started {
			return fasthttp.StatusAccepted, t, nil
		}
		if wait > 0 {
			wctx, cancel := context.WithCancel(s.bg)
			defer cancel()
			if f, err := gm.WaitTask(wctx, a[0], t.TaskID, time.Duration(wait)*time.Second); err == nil {
				t = f
			}
			if t.Status != group.TaskRunning {
				return fasthttp.StatusOK, t, nil
			}
		}
		return fasthttp.StatusCreated, t, nil
	})
}

func (s *Server) getGroupTask(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	gm, a, err := s.groupArgs(args)
	if err != nil {
		return err
	}
	t, err := gm.Task(a[0], a[1])
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, t)
	return nil
}
