package httpapi

import (
	"net/url"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/internal/sse"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// Live frames: GET /tier1/{capability_id}/frames/stream?device_id= is an
// SSE stream of the routine's frames as they are stored, one event
// "frames" per batch (or per few batches when they come fast):
//
//	event: frames
//	data: {"frames":[{...},...],"skipped":0,"missed_batches":0}
//
// Frames have the shape of GET /tier1/{id}/frames. An event carries at
// most liveMaxFrames frames, the newest; skipped counts the older ones of
// the same batches left out. A reader that does not keep up loses whole
// batches (counted in missed_batches, a running total) instead of slowing
// the ingest. The stream starts with the comment ": live" once it is
// subscribed, so a client that opens it first and then reads the history
// with GET /tier1/{id}/frames misses nothing.
const (
	liveMaxFrames = 500
	liveBuffer    = 256     // batches queued for one reader
	liveMaxBytes  = 4 << 20 // and their bytes (plus one batch)
)

func (s *Server) tier1Live(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	capID, err := url.PathUnescape(args[0])
	if err != nil {
		return wire.Errorf(wire.CodeInvalidParams, "bad routine id in path")
	}
	if _, ok := s.t1.Registry().Get(capID); !ok {
		return wire.Errorf(wire.CodeCapabilityLacking, "no routine %q", capID)
	}
	device := string(ctx.QueryArgs().Peek("device_id"))
	header := sse.Header(fasthttp.StatusOK, "text/event-stream; charset=utf-8",
		"Cache-Control: no-cache", "X-Accel-Buffering: no")
	in := s.t1.Ingestor()
	s.streams.takeOver(ctx, header, func(w *sse.Writer, done <-chan struct{}) error {
		wt := in.Watch(liveBuffer, liveMaxBytes)
		defer wt.Close()
		if _, err := w.WriteString(": live\n\n"); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		var buf []byte
		_, err := sse.Follow(w, done, wt.C, func() bool { return false }, func(l tier1.Live) (bool, error) {
			ls := []tier1.Live{l}
		drain:
			for len(ls) < 64 { // take what else waits: one event for them
				select {
				case more, ok := <-wt.C:
					if !ok {
						break drain
					}
					ls = append(ls, more)
				default:
					break drain
				}
			}
			var err error
			buf, err = appendLiveEvent(buf[:0], ls, capID, device, wt.Missed.Load())
			for _, l := range ls {
				wt.Release(l)
			}
			if err != nil || len(buf) == 0 {
				return false, err
			}
			_, err = w.Write(buf)
			return false, err
		})
		return err
	})
	return nil
}

// appendLiveEvent writes one "frames" event of the batches of routine
// capID (and device, when not empty); nothing when none matches.
func appendLiveEvent(buf []byte, ls []tier1.Live, capID, device string, missed uint64) ([]byte, error) {
	d, frames, err := tier1.LiveFrames(ls, capID, device)
	if err != nil || len(frames) == 0 {
		return buf, err
	}
	skipped := max(len(frames)-liveMaxFrames, 0)
	buf = append(buf, "event: frames\ndata: {\"frames\":["...)
	for i, f := range frames[skipped:] {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = f.AppendJSON(buf, d)
	}
	buf = append(buf, `],"skipped":`...)
	buf = strconv.AppendInt(buf, int64(skipped), 10)
	buf = append(buf, `,"missed_batches":`...)
	buf = strconv.AppendUint(buf, missed, 10)
	return append(buf, "}\n\n"...), nil
}
