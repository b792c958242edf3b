package httpapi

import (
	"encoding/base64"
	"encoding/binary"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// tier1Scope is the deduplication scope of a sender: its token, and the
// source agent an uplink names.
func tier1Scope(ctx *fasthttp.RequestCtx, p agent.Principal) string {
	if src := ctx.Request.Header.Peek(tier1.HeaderSourceAgent); len(src) > 0 && len(src) <= 256 {
		return p.ID + "/" + string(src)
	}
	return p.ID
}

// ingestTier1 serves POST /tier1/{capability_id}: one msgpack batch,
// answered {"ok":true,"accepted":N,"batch_id":...} once it is durable.
func (s *Server) ingestTier1(ctx *fasthttp.RequestCtx, p agent.Principal, args []string) error {
	capID, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad routine id in path")
	}
	if ct := ctx.Request.Header.ContentType(); !wire.IsMsgpack(string(ct)) {
		return wire.Errorf(wire.CodeUnsupportedMedia, "send the batch as Content-Type: application/msgpack")
	}
	body := ctx.PostBody()
	if max := s.a.Config().Tier1.MaxBatchBytes; len(body) > max {
		return wire.Errorf(wire.CodePayloadTooLarge, "the batch is %d bytes; tier1.max_batch_bytes is %d", len(body), max)
	}
	res, err := s.a.Tier1().Ingest(ctx, tier1Scope(ctx, p), capID, body)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, &tier1Ack{OK: true, Accepted: res.Accepted, BatchID: res.BatchID, Duplicate: res.Duplicate})
	return nil
}

// tier1Ack answers one batch, over HTTP and WebSocket.
type tier1Ack struct {
	OK        bool        `json:"ok" msgpack:"ok"`
	Accepted  int         `json:"accepted" msgpack:"accepted"`
	BatchID   string      `json:"batch_id,omitempty" msgpack:"batch_id,omitempty"`
	Duplicate bool        `json:"duplicate,omitempty" msgpack:"duplicate,omitempty"`
	Error     *wire.Error `json:"error,omitempty" msgpack:"error,omitempty"`
}

type routineInfo struct {
	tier1.Descriptor
	Hash   string        `json:"hash" msgpack:"hash"`
	Stored routineStored `json:"stored" msgpack:"stored"`
}

func (s *Server) tier1Routines(ctx *fasthttp.RequestCtx, _ agent.Principal, _ []string) error {
	list := s.a.Tier1().Registry().List()
	out := make([]routineInfo, len(list))
	for i := range list {
		out[i] = routineInfo{Descriptor: list[i], Hash: list[i].Hash(), Stored: s.storedOf(list[i].CapabilityID)}
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"routines": out})
	return nil
}

// maxFramesPerPage bounds GET /tier1/{id}/frames.
const maxFramesPerPage = 10_000

// tier1Frames serves GET /tier1/{capability_id}/frames?since=&until=
// &device_id=&limit=&page_token=: frames in time order as objects with
// named fields. since and until are RFC 3339 times or unix nanoseconds.
func (s *Server) tier1Frames(ctx *fasthttp.RequestCtx, _ agent.Principal, args []string) error {
	capID, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad routine id in path")
	}
	d, ok := s.a.Tier1().Registry().Get(capID)
	if !ok {
		return wire.Errorf(wire.CodeCapabilityLacking, "no routine %q", capID)
	}
	q := ctx.QueryArgs()
	limit, err := queryInt(ctx, "limit", 1000, 1, maxFramesPerPage)
	if err != nil {
		return err
	}
	since, err := queryTime(q.Peek("since"), "since")
	if err != nil {
		return err
	}
	until, err := queryTime(q.Peek("until"), "until")
	if err != nil {
		return err
	}
	// Blocks are keyed by their first frame's ts and span at most
	// tier1.BlockSpan, so a scan starts that much before since.
	var from, to []byte
	if since != nil {
		from = store.T1Key(nil, *since-tier1.BlockSpan, "", 0)
	}
	if until != nil {
		to = store.T1Key(nil, *until, "", 0)
	}
	var afterKey []byte
	afterIdx := -1
	if tok := q.Peek("page_token"); len(tok) > 0 {
		raw, err := base64.RawURLEncoding.DecodeString(string(tok))
		if err != nil || len(raw) < 19 {
			return wire.Errorf(wire.CodeInvalidParams, "page_token is not one this agent gave").With("field", "page_token")
		}
		afterKey, afterIdx = raw[:len(raw)-2], int(binary.BigEndian.Uint16(raw[len(raw)-2:]))
		from = afterKey
	}
	device := q.Peek("device_id")
	kts := tsField(d)
	var frames []tier1.Frame
	var lastKey []byte
	lastIdx := 0
	more := false
	var scanErr error
	err = s.a.Store().View(func(tx *store.Tx) error {
		return tx.T1Scan(capID, from, to, func(k, v []byte) bool {
			if len(device) > 0 && string(store.T1KeyDevice(k)) != string(device) {
				return true
			}
			br, err := tier1.NewBlockReader(v, d)
			if err != nil {
				scanErr = err
				return false
			}
			same := afterKey != nil && string(k) == string(afterKey)
			for i := 0; i < br.Len(); i++ {
				f, err := br.Next()
				if err != nil {
					scanErr = err
					return false
				}
				if same && i <= afterIdx {
					continue
				}
				if kts >= 0 {
					if t := f.At(kts); t.Kind() == tier1.KindInt &&
						(since != nil && t.Int() < *since || until != nil && t.Int() >= *until) {
						continue
					}
				}
				if len(frames) == limit {
					more = true
					return false
				}
				frames = append(frames, f)
				lastKey, lastIdx = append(lastKey[:0], k...), i
			}
			return true
		})
	})
	if err == nil {
		err = scanErr
	}
	if err != nil {
		return wire.Errorf(wire.CodeSysStorage, "read frames: %v", err)
	}
	next := ""
	if more {
		next = base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint16(lastKey, uint16(lastIdx)))
	}
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

// tsField is the index of a routine's ts field (int), or -1.
func tsField(d *tier1.Descriptor) int {
	for i, f := range d.Fields {
		if f.Name == "ts" && f.Type == tier1.TypeInt {
			return i
		}
	}
	return -1
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
