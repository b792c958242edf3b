package httpapi

import (
	"net/url"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// Pair requests (peer/pairing.go): agents that paired this one and wait
// for an operator to accept them.

func (pa peerAPI) listPairRequests(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	write(ctx, fasthttp.StatusOK, map[string]any{"pending": pa.net.Pairing().PairRequests()})
	return nil
}

func (pa peerAPI) acceptPeer(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	var o peer.PairOptions // optional body: {"tls_fingerprint"}
	if len(ctx.PostBody()) > 0 {
		if err := decode(ctx, &o); err != nil {
			return err
		}
	}
	p, err := pa.net.Pairing().AcceptPeer(ctx, id, o)
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/agents/"+url.PathEscape(p.AgentID))
	write(ctx, fasthttp.StatusCreated, p)
	return nil
}

func (pa peerAPI) declinePeer(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	if err := pa.net.Pairing().DeclinePeer(id); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
