package httpapi

import (
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/bodycodec"
	"github.com/synapse-edge/synapse/wire"
)

// tier1Scope is the deduplication scope of a sender: its token, and the
// source agent an uplink names.
func tier1Scope(ctx *fasthttp.RequestCtx, p auth.Principal) string {
	if src := ctx.Request.Header.Peek(tier1.HeaderSourceAgent); len(src) > 0 && len(src) <= 256 {
		return p.ID + "/" + string(src)
	}
	return p.ID
}

// ingestTier1 serves POST /tier1/{capability_id}: one msgpack batch,
// answered {"ok":true,"accepted":N,"batch_id":...} once it is durable.
func (s *Server) ingestTier1(ctx *fasthttp.RequestCtx, p auth.Principal, args []string) error {
	capID, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad routine id in path")
	}
	if ct := ctx.Request.Header.ContentType(); !wire.IsMsgpack(string(ct)) {
		return wire.Errorf(wire.CodeUnsupportedMedia, "send the batch as Content-Type: application/msgpack")
	}
	// Every answer says which codings the body may come in (RFC 7694):
	// the exporter of a downstream agent reads it (compression auto).
	ctx.Response.Header.Set(fasthttp.HeaderAcceptEncoding, bodycodec.Accepted)
	body := ctx.PostBody()
	max := s.t1.Config().MaxBatchBytes
	if coding := string(ctx.Request.Header.Peek(fasthttp.HeaderContentEncoding)); coding != "" {
		var err error
		if body, err = bodycodec.Decode(coding, body, max); err != nil {
			return bodyCodingError(err, max)
		}
	}
	if len(body) > max {
		return wire.Errorf(wire.CodePayloadTooLarge, "the batch is %d bytes; tier1.max_batch_bytes is %d", len(body), max)
	}
	res, err := s.t1.Ingestor().Ingest(ctx, tier1Scope(ctx, p), capID, body)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, &wire.Tier1Ack{OK: true, Accepted: res.Accepted, BatchID: res.BatchID, Duplicate: res.Duplicate})
	return nil
}

// bodyCodingError is the refusal of a batch whose Content-Encoding did
// not decode: 413 past the limit (a bomb is stopped there), 415 for a
// coding not taken, 400 for a truncated or corrupt stream.
func bodyCodingError(err error, max int) error {
	switch {
	case errors.Is(err, bodycodec.ErrTooLarge):
		return wire.Errorf(wire.CodePayloadTooLarge, "the batch %v; tier1.max_batch_bytes is %d", err, max).With("limit_bytes", max)
	case errors.Is(err, bodycodec.ErrUnsupported):
		return wire.Errorf(wire.CodeUnsupportedMedia, "%v", err)
	}
	return wire.Errorf(wire.CodeMessageFormatInvalid, "the batch's Content-Encoding: %v", err)
}

type routineInfo struct {
	tier1.Descriptor
	Hash   string        `json:"hash" msgpack:"hash"`
	Stored routineStored `json:"stored" msgpack:"stored"`
}

// routineStored is what the store holds of a routine, in GET
// /tier1/routines: frames and bytes kept, the routine's limit on bytes and
// overflow policy, the time (unix ns) of the oldest frame kept (0 when
// none), the frames dropped (ever) and the batches refused by the quota
// (since start).
type routineStored struct {
	Frames         uint64 `json:"frames" msgpack:"frames"`
	Bytes          uint64 `json:"bytes" msgpack:"bytes"`
	MaxBytes       int64  `json:"max_bytes" msgpack:"max_bytes"`
	Overflow       string `json:"overflow" msgpack:"overflow"`
	OldestTS       int64  `json:"oldest_ts,omitempty" msgpack:"oldest_ts,omitempty"`
	DroppedFrames  uint64 `json:"dropped_frames" msgpack:"dropped_frames"`
	RefusedBatches uint64 `json:"refused_batches" msgpack:"refused_batches"`
}

func (s *Server) tier1Routines(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	in := s.t1.Ingestor()
	list := in.Registry().List()
	out := make([]routineInfo, len(list))
	for i := range list {
		st, err := in.Stored(list[i].CapabilityID)
		if err != nil {
			return err
		}
		dk := in.Disk(list[i].CapabilityID)
		out[i] = routineInfo{Descriptor: list[i], Hash: list[i].Hash(), Stored: routineStored{Frames: st.Frames, Bytes: st.Bytes,
			MaxBytes: dk.MaxBytes, Overflow: dk.Overflow, OldestTS: st.OldestTS, DroppedFrames: dk.DroppedFrames, RefusedBatches: dk.RefusedBatches}}
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"routines": out})
	return nil
}

// tier1Frames serves GET /tier1/{capability_id}/frames?since=&until=
// &device_id=&limit=&page_token=: frames in time order as objects with
// named fields (tier1.Ingestor.Frames). since and until are RFC 3339 times
// or unix nanoseconds; page_token is the opaque next_page_token of the
// page before.
func (s *Server) tier1Frames(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	capID, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad routine id in path")
	}
	in := s.t1.Ingestor()
	if _, ok := in.Registry().Get(capID); !ok {
		return wire.Errorf(wire.CodeCapabilityLacking, "no routine %q", capID)
	}
	q := ctx.QueryArgs()
	fq := tier1.FrameQuery{DeviceID: string(q.Peek("device_id")), PageToken: string(q.Peek("page_token"))}
	if fq.Limit, err = queryInt(ctx, "limit", 1000, 1, tier1.MaxFramesPerPage); err != nil {
		return err
	}
	if fq.Since, err = queryTime(q.Peek("since"), "since"); err != nil {
		return err
	}
	if fq.Until, err = queryTime(q.Peek("until"), "until"); err != nil {
		return err
	}
	page, err := in.Frames(capID, fq)
	if err != nil {
		return err
	}
	d, frames, next := page.Desc, page.Frames, page.NextPageToken
	if wire.IsMsgpack(string(ctx.Request.Header.Peek(fasthttp.HeaderAccept))) {
		objs := make([]map[string]any, len(frames))
		for i, f := range frames {
			objs[i] = f.JSONObject(d)
		}
		write(ctx, fasthttp.StatusOK, map[string]any{"capability_id": capID, "frames": objs, "next_page_token": next})
		return nil
	}
	buf := make([]byte, 0, 64+len(frames)*128)
	buf = append(buf, `{"capability_id":`...)
	buf = strconv.AppendQuote(buf, capID)
	buf = append(buf, `,"frames":[`...)
	for i, f := range frames {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = f.AppendJSON(buf, d)
	}
	buf = append(buf, `],"next_page_token":`...)
	buf = strconv.AppendQuote(buf, next)
	buf = append(buf, '}')
	writeRaw(ctx, fasthttp.StatusOK, wire.ContentJSON, buf)
	return nil
}

func queryTime(raw []byte, name string) (*int64, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return &n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidParams, "%s must be an RFC 3339 time or unix nanoseconds", name).With("field", name)
	}
	n := t.UnixNano()
	return &n, nil
}
