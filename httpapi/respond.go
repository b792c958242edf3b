package httpapi

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// responseCodec picks the codec of the answer from Accept.
func responseCodec(ctx *fasthttp.RequestCtx) wire.Codec {
	return wire.CodecFor(string(ctx.Request.Header.Peek(fasthttp.HeaderAccept)))
}

// requestCodec picks the codec of the body from Content-Type; anything but
// JSON or msgpack is refused.
func requestCodec(ctx *fasthttp.RequestCtx) (wire.Codec, error) {
	ct := bytes.ToLower(ctx.Request.Header.ContentType())
	switch {
	case len(ct) == 0, bytes.HasPrefix(ct, []byte("application/json")), bytes.HasSuffix(ct, []byte("+json")):
		return wire.JSON, nil
	case bytes.HasPrefix(ct, []byte("application/x-www-form-urlencoded")):
		// curl -d sends this type by default; the body is still JSON.
		return wire.JSON, nil
	case wire.IsMsgpack(string(ct)):
		return wire.Msgpack, nil
	}
	return nil, wire.Errorf(wire.CodeUnsupportedMedia, "Content-Type %q is not supported; use application/json or application/msgpack", ct)
}

// decode decodes the request body into v with the request's codec.
func decode(ctx *fasthttp.RequestCtx, v any) error {
	c, err := requestCodec(ctx)
	if err != nil {
		return err
	}
	body := ctx.PostBody()
	if len(body) == 0 {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "the request body is empty")
	}
	if err := c.Unmarshal(body, v); err != nil {
		name := "JSON"
		if c == wire.Msgpack {
			name = "msgpack"
		}
		if errors.Is(err, wire.ErrInvalidUTF8) {
			return wire.Errorf(wire.CodeValUTF8, "%s body: %v", name, err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return wire.Errorf(wire.CodeMessageFormatInvalid, "the %s body ends early (truncated)", name)
		}
		return wire.Errorf(wire.CodeMessageFormatInvalid, "%s body: %v", name, err)
	}
	return nil
}

// encode renders v in the answer's codec.
func encode(ctx *fasthttp.RequestCtx, v any) (contentType string, body []byte, err error) {
	c := responseCodec(ctx)
	body, err = c.Marshal(v)
	return c.ContentType(), body, err
}

// write answers status with v in the negotiated codec.
func write(ctx *fasthttp.RequestCtx, status int, v any) {
	ct, body, err := encode(ctx, v)
	if err != nil {
		writeError(ctx, wire.Errorf(wire.CodeInternal, "encode response: %v", err))
		return
	}
	writeRaw(ctx, status, ct, body)
}

func writeRaw(ctx *fasthttp.RequestCtx, status int, contentType string, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType(contentType)
	ctx.SetBody(body)
}

// writeError is the one adapter that turns any error into a TPError answer.
// internalErrorJSON is the answer when even an error cannot be encoded
// (or a stream's handler panicked): what wire.JSON makes of
// wire.Errorf(wire.CodeInternal, "internal error"), TestInternalErrorJSON.
var internalErrorJSON = []byte(`{"error":{"code":"internal_error","message":"internal error","retriable":true}}`)

func writeError(ctx *fasthttp.RequestCtx, err error) {
	e := wire.AsError(err)
	if e.Code == wire.CodeInternal && e.Message == "internal error" {
		// keep the cause out of the answer but not out of sight
		ctx.Response.Header.Set("X-Synapse-Error", "internal")
	}
	if wire.RetryAfter(e.Code) {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	} else if e.Code == wire.CodeStorageQuota { // space comes back with retention, not in a second
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, "30")
	}
	ct, body, merr := encode(ctx, wire.ErrorBody{Error: e})
	if merr != nil {
		ct, body = wire.ContentJSON, internalErrorJSON
	}
	writeRaw(ctx, e.Status(), ct, body)
}

func queryInt(ctx *fasthttp.RequestCtx, name string, def, lo, hi int) (int, error) {
	raw := ctx.QueryArgs().Peek(name)
	if len(raw) == 0 {
		return def, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < lo || n > hi {
		return 0, wire.Errorf(wire.CodeInvalidParams, "%s must be a whole number from %d to %d", name, lo, hi).With("field", name)
	}
	return n, nil
}
