package httpapi

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// Idempotency keys follow the IETF httpapi draft (SPEC §5.3); the rules
// are the agent's (agent/idempotency.go), the same for every API. Here:
// the key is the Idempotency-Key header, else the body's idempotency_key
// where a route has one (the header wins); "the same request" is the same
// method, path with query, content type, accepted type and body; a replay
// is the stored answer byte for byte with Idempotent-Replayed: true (and
// the Location of the task it created).

// idemKey is the request's idempotency key: the header, else bodyKey.
func idemKey(ctx *fasthttp.RequestCtx, bodyKey string) string {
	if k := ctx.Request.Header.Peek("Idempotency-Key"); len(k) > 0 {
		return string(k)
	}
	return bodyKey
}

// idemRequest names the request made with key by p.
func idemRequest(ctx *fasthttp.RequestCtx, p auth.Principal, key string) agent.IdemRequest {
	return agent.IdemRequest{Scope: p.ID, Key: key, Hash: requestHash(ctx)}
}

// requestHash fingerprints what makes two requests "the same": method, path
// with query, content type, accepted type and body.
func requestHash(ctx *fasthttp.RequestCtx) string {
	h := sha256.New()
	for _, part := range [][]byte{ctx.Method(), ctx.RequestURI(), ctx.Request.Header.ContentType(),
		ctx.Request.Header.Peek(fasthttp.HeaderAccept), ctx.PostBody()} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// encodeAnswer encodes v as the answer to ctx's request, for storing.
func encodeAnswer(ctx *fasthttp.RequestCtx, status int, v any) (*agent.IdemAnswer, error) {
	ct, body, err := encode(ctx, v)
	if err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "encode response: %v", err)
	}
	return &agent.IdemAnswer{Status: status, ContentType: ct, Body: body}, nil
}

// writeAnswer sends an answer; a replayed one says so.
func writeAnswer(ctx *fasthttp.RequestCtx, ans *agent.IdemAnswer, replayed bool) {
	if replayed {
		ctx.Response.Header.Set("Idempotent-Replayed", "true")
		if ans.TaskID != "" {
			ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/task/"+ans.TaskID)
		}
	}
	writeRaw(ctx, ans.Status, ans.ContentType, ans.Body)
}

// idempotent runs a creating request under its Idempotency-Key, else
// bodyKey (the body's idempotency_key field, seed 003 §5.3; the header
// wins), if any: a repeated request replays the first answer
// (agent.Idempotent: the record is stored after the request succeeded, in
// a transaction of its own). Without a key, run's answer is written as it
// is.
func idempotent(ctx *fasthttp.RequestCtx, a *agent.Agent, p auth.Principal, bodyKey string, run func() (int, any, error)) error {
	key := idemKey(ctx, bodyKey)
	if key == "" {
		status, v, err := run()
		if err == nil {
			write(ctx, status, v)
		}
		return err
	}
	ans, replayed, err := a.Idempotent(ctx, idemRequest(ctx, p, key), func() (*agent.IdemAnswer, error) {
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
