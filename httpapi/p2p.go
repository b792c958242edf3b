package httpapi

import (
	"bytes"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/peer/agents"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// P2P routes (SPEC §6).
//
// POST /message and POST /callback take one envelope (JSON, or msgpack
// with Content-Type: application/msgpack) and need no bearer token: the
// signature of a paired peer is the authentication (an unknown sender or a
// bad signature is 401 TP-ID003), and for a peer that shares an HMAC
// secret also its X-Synapse-Signature header (peer/p2p_hmac.go). They answer 200 with a signed response
// envelope for synchronous types (p2p:capability_query), 202
// {"accepted":true,"message_id"} otherwise, and 200 {"accepted":true,
// "message_id","duplicate":true,"code":"TP-ID004"} for a message_id
// already processed.
//
// Peers: POST /agents {"endpoint"} (admin) pairs, GET /agents,
// GET /agents/{agent_id}, DELETE /agents/{agent_id} (admin). Pair
// requests of agents that paired this one (admin, pairing.go): GET
// /pairing → {"pending":[...]}, POST /pairing/{agent_id}/accept → 201 the
// new peer, DELETE /pairing/{agent_id} declines.
//
// Outbox (admin): GET /outbox?state=pending|dead&peer=&url=&limit=
// &page_token= → {"items":[...],"next_page_token"}; POST
// /outbox/{id}/retry; POST /outbox/retry?peer= (or url=) →
// {"requeued":N}; DELETE /outbox/{id}.
//
// Streams: GET /messages/stream (WebSocket, p2p_ws.go) and
// GET /messages/callback (SSE of received envelopes).
func (pa peerAPI) routes() []route {
	return []route{
		{"POST", seg("message"), "", pa.message}, // envelopes, and SendMessage (send_message.go)
		{"POST", seg("message/batch"), "", pa.receiveBatch},
		{"POST", seg("callback"), "", pa.receiveMessage},
		{"GET", seg("messages/stream"), auth.ScopeTasksWrite, pa.messageStream},
		{"GET", seg("messages/callback"), auth.ScopeTasksRead, pa.messageFeed},

		{"POST", seg("agents"), auth.ScopeAdmin, pa.addPeer},
		{"GET", seg("agents"), auth.ScopeTasksRead, pa.listPeers},
		{"GET", seg("agents/*"), auth.ScopeTasksRead, pa.getPeer},
		{"DELETE", seg("agents/*"), auth.ScopeAdmin, pa.removePeer},
		{"GET", seg("pairing"), auth.ScopeAdmin, pa.listPairRequests},
		{"POST", seg("pairing/*/accept"), auth.ScopeAdmin, pa.acceptPeer},
		{"DELETE", seg("pairing/*"), auth.ScopeAdmin, pa.declinePeer},

		{"GET", seg("outbox"), auth.ScopeAdmin, pa.listOutbox},
		{"POST", seg("outbox/retry"), auth.ScopeAdmin, pa.retryDeadLetters},
		{"POST", seg("outbox/*/retry"), auth.ScopeAdmin, pa.retryOutbox},
		{"DELETE", seg("outbox/*"), auth.ScopeAdmin, pa.dropOutbox},
	}
}

// peerAPI serves the peer network's routes: the envelopes of peers,
// paired agents and pair requests, the outbox, the streams of received
// envelopes, and SendMessage.
type peerAPI struct {
	net *peer.Network // nil: the routes answer 503 (withNet)
	a   *agent.Agent
	// authorize is the server's token check, for POST /message, whose
	// route needs none but whose SendMessage does.
	authorize func(ctx *fasthttp.RequestCtx, scope auth.Scope) (auth.Principal, error)
	// findAgents answers GET /agents with a directory query (registry.go).
	findAgents func(ctx *fasthttp.RequestCtx, q peer.DirectoryQuery) error
	streams    *streamer
}

// receiveMessage serves POST /message and POST /callback: the request's
// body and headers go to the one receiver (peer.Inbound.Deliver), whose
// answer is written as it is.
func (pa peerAPI) receiveMessage(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	c, err := requestCodec(ctx)
	if err != nil {
		return err
	}
	h := &ctx.Request.Header
	header := map[string]string{
		wire.HeaderSignature: string(h.Peek(wire.HeaderSignature)),
		peer.HeaderSeq:       string(h.Peek(peer.HeaderSeq)),
		peer.HeaderSeqPrev:   string(h.Peek(peer.HeaderSeqPrev)),
	}
	if len(h.Peek(fasthttp.HeaderAccept)) > 0 {
		header[peer.HeaderAccept] = responseCodec(ctx).ContentType()
	}
	a, _ := pa.net.Inbound().Deliver(ctx, &transport.Inbound{Kind: transport.Envelope, Body: bytes.Clone(ctx.PostBody()),
		ContentType: c.ContentType(), Header: header})
	if a.Error != nil && c == wire.Msgpack && len(h.Peek(fasthttp.HeaderAccept)) == 0 {
		// A refusal over HTTP is in the codec Accept names, JSON by
		// default, as on every route (the receiver answers in the
		// envelope's codec, which the other doors want).
		if b, err := wire.JSON.Marshal(wire.ErrorBody{Error: a.Error}); err == nil {
			a.Body, a.ContentType = b, wire.ContentJSON
		}
	}
	writeDelivered(ctx, a)
	return nil
}

// writeDelivered writes the one receiver's answer, with the announcements of
// ordered delivery and batches.
func writeDelivered(ctx *fasthttp.RequestCtx, a transport.Answer) {
	for k, v := range a.Header {
		ctx.Response.Header.Set(k, v)
	}
	ctx.Response.Header.Set(peer.HeaderBatch, maxBatch)
	ctx.Response.Header.Set(peer.HeaderBatchSigning, peer.BatchSigningEd25519)
	if a.RetryAfter > 0 {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, strconv.Itoa(max(1, int(a.RetryAfter/time.Second))))
	}
	if a.Error != nil && a.Error.Code == wire.CodeInternal && a.Error.Message == "internal error" {
		ctx.Response.Header.Set("X-Synapse-Error", "internal")
	}
	writeRaw(ctx, a.Status, a.ContentType, a.Body)
}

// maxBatch is the value of peer.HeaderBatch.
var maxBatch = strconv.Itoa(peer.MaxBatch)

// receiveBatch serves POST /message/batch: many envelopes of one sender in
// one request (peer/p2p_batch.go), answered once all are durable.
func (pa peerAPI) receiveBatch(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	if c, err := requestCodec(ctx); err != nil {
		return err
	} else if c != wire.JSON {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "a batch is JSON")
	}
	ctx.Response.Header.Set(peer.HeaderOrdering, peer.OrderingPerSender)
	ctx.Response.Header.Set(peer.HeaderBatch, maxBatch)
	ctx.Response.Header.Set(peer.HeaderBatchSigning, peer.BatchSigningEd25519)
	ans, err := pa.net.Inbound().ReceiveBatch(ctx, ctx.PostBody(), string(ctx.Request.Header.Peek(wire.HeaderSignature)),
		string(ctx.Request.Header.Peek(peer.HeaderBatchSignature)))
	if err != nil {
		return err
	}
	b, err := ans.AppendJSON(nil)
	if err != nil {
		return wire.Errorf(wire.CodeInternal, "encode answer: %v", err)
	}
	writeRaw(ctx, fasthttp.StatusOK, wire.ContentJSON, b)
	return nil
}

// encodeEnvelope writes m in msgpack or JSON with its content type.
func encodeEnvelope(m *wire.UnifiedSynapseMessage, msgpack bool) (string, []byte, error) {
	var b []byte
	var err error
	ct := wire.ContentJSON
	if msgpack {
		ct = wire.ContentMsgpack
		b, err = wire.EncodeEnvelopeMsgpack(m)
	} else {
		b, err = wire.EncodeEnvelopeJSON(m)
	}
	if err != nil {
		return "", nil, wire.Errorf(wire.CodeInternal, "encode envelope: %v", err)
	}
	return ct, b, nil
}

// ---- peers ----

func (pa peerAPI) addPeer(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	var req struct {
		Endpoint string `json:"endpoint" msgpack:"endpoint"`
		peer.PairOptions
	}
	if err := decode(ctx, &req); err != nil {
		return err
	}
	p, created, err := pa.net.Pairing().Pair(ctx, req.Endpoint, req.PairOptions)
	if err != nil {
		return err
	}
	status := fasthttp.StatusOK
	if created {
		status = fasthttp.StatusCreated
		ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/agents/"+url.PathEscape(p.AgentID))
	}
	write(ctx, status, p)
	return nil
}

func (pa peerAPI) listPeers(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	if q, ok := directoryQuery(ctx); ok { // FindByCapability (registry.go)
		return pa.findAgents(ctx, q)
	}
	write(ctx, fasthttp.StatusOK, agents.List(pa.net))
	return nil
}

func pathArg(arg, what string) (string, error) {
	v, err := url.PathUnescape(arg)
	if err != nil {
		return "", wire.Errorf(wire.CodeInvalidParams, "bad %s in path", what)
	}
	return v, nil
}

func (pa peerAPI) getPeer(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	d, err := agents.Query(pa.net, pa.a.Capabilities(), id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, d)
	return nil
}

func (pa peerAPI) removePeer(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "agent_id")
	if err != nil {
		return err
	}
	if err := pa.net.Pairing().RemovePeer(ctx, id); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// ---- outbox ----

func (pa peerAPI) listOutbox(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	limit, err := queryInt(ctx, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	q := ctx.QueryArgs()
	items, next, err := pa.net.Outbox().List(peer.OutboxQuery{
		State: string(q.Peek("state")), Peer: string(q.Peek("peer")), URL: string(q.Peek("url")),
		After: string(q.Peek("page_token")), Limit: limit,
	})
	if err != nil {
		return err
	}
	if items == nil {
		items = []peer.OutboxEntry{}
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"items": items, "next_page_token": next})
	return nil
}

func (pa peerAPI) retryOutbox(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "id")
	if err != nil {
		return err
	}
	e, err := pa.net.Outbox().Retry(ctx, id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, e)
	return nil
}

func (pa peerAPI) retryDeadLetters(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	q := ctx.QueryArgs()
	n, err := pa.net.Outbox().RetryDeadLetters(ctx, string(q.Peek("peer")), string(q.Peek("url")))
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"requeued": n})
	return nil
}

func (pa peerAPI) dropOutbox(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "id")
	if err != nil {
		return err
	}
	if err := pa.net.Outbox().Drop(ctx, id); err != nil {
		return err
	}
	ctx.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// ---- SSE of received envelopes ----

// messageFeed serves GET /messages/callback: every envelope the agent
// accepts, as an SSE event "message" whose data is the envelope as JSON and
// whose id increases by one per envelope. Last-Event-ID (or the
// last_event_id query parameter) resumes after that id while it is among
// the last 1,000 kept in memory; older ones are gone.
func (pa peerAPI) messageFeed(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	feed := pa.net.Messages()
	if feed == nil {
		return wire.Errorf(wire.CodeAgentNotReady, "")
	}
	last := feed.Last()
	if n, ok, err := sse.Resume(ctx, true); err != nil {
		return err
	} else if ok {
		last = n
	}
	header := sse.Header(fasthttp.StatusOK, "text/event-stream; charset=utf-8",
		"Cache-Control: no-cache", "X-Accel-Buffering: no")
	pa.streams.takeOver(ctx, header, func(w *sse.Writer, done <-chan struct{}) error {
		return pumpFeed(w, done, feed, last)
	})
	return nil
}

func pumpFeed(w *sse.Writer, done <-chan struct{}, feed *peer.MessageFeed, last uint64) error {
	for { // one pass per subscription; a lagging reader reloads from the ring
		sub := feed.Subscribe()
		kept, _ := feed.Since(last)
		for _, m := range kept {
			if err := writeMessageEvent(w, m); err != nil {
				sub.Close()
				return err
			}
			last = m.Seq
		}
		if err := w.Flush(); err != nil {
			sub.Close()
			return err
		}
		lagged, err := followFeed(w, done, sub, &last)
		sub.Close()
		if !lagged {
			return err
		}
	}
}

func followFeed(w *sse.Writer, done <-chan struct{}, sub *peer.FeedSubscription, last *uint64) (lagged bool, err error) {
	return sse.Follow(w, done, sub.C, sub.Lagged, func(m peer.ReceivedMessage) (bool, error) {
		if m.Seq <= *last {
			return false, nil
		}
		if err := writeMessageEvent(w, m); err != nil {
			return false, err
		}
		*last = m.Seq
		return false, nil
	})
}

// writeMessageEvent writes one SSE event; a line break inside the data
// (a pretty-printed JSON envelope) becomes another data line.
func writeMessageEvent(w *sse.Writer, m peer.ReceivedMessage) error {
	data := m.JSON
	if len(data) == 0 {
		data = []byte("{}")
	}
	return w.Event(strconv.FormatUint(m.Seq, 10), "message", data)
}
