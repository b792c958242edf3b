package export

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/bodycodec"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// States of an export.
const (
	StateConnected  = "connected"
	StateBackingOff = "backing_off"
	StatePaused     = "paused"
)

const (
	backoffMin  = 500 * time.Millisecond
	sendTimeout = 30 * time.Second
	// liveAfter: a single lane whose oldest batch waits longer than this
	// splits (live_first): what is queued from then on goes first.
	liveAfter = time.Second
	// maxWindowBytes bounds the batches read for one window.
	maxWindowBytes = 1 << 20
)

// Export is one running export.
type Export struct {
	cfg      Config
	set      *Set
	routines map[string]bool // nil: all

	mu      sync.Mutex
	cur     cursor // as committed
	state   string
	lastErr string
	ok      bool // the last send reached the upstream
	resume  chan struct{}

	ownMu  sync.Mutex
	own    *bucket
	capBPS atomic.Int64 // the cap in force (cfg's, or a reload's)
	rate   rate
	// Since start, for the uplink's series: batches delivered, refused
	// for good, and failed attempts.
	sentBatches, refusedBatches, Failures atomic.Uint64
	// announced is the Accept-Encoding of the upstream's last answer
	// (HTTP): the codings it takes. rawBytes and wireBytes count, since
	// start, the bodies delivered as stored and as they went.
	announced           atomic.Pointer[string]
	rawBytes, wireBytes atomic.Uint64
}

// lane is where a window was read: the backlog (or the single lane) or
// the live lane.
type lane int

const (
	laneLow lane = iota
	laneLive
)

// entry is one batch read from the log.
type entry struct {
	seq   uint64
	h     tier1.OutboxEntry
	batch []byte
}

// run forwards until ctx is done.
func (e *Export) run(ctx context.Context) {
	backoff := backoffMin
	maxBackoff := time.Duration(e.cfg.MaxBackoffMS) * time.Millisecond
	for ctx.Err() == nil {
		e.mu.Lock()
		paused, resume := e.cur.Paused, e.resume
		e.mu.Unlock()
		if paused {
			select {
			case <-resume:
			case <-ctx.Done():
				return
			}
			continue
		}
		ln, start, win, err := e.next(ctx)
		if err != nil {
			if ctx.Err() == nil {
				e.set.log.Error("export: read the log", "export", e.cfg.Name, "err", err)
				_ = e.set.wait(ctx, time.Second)
			}
			continue
		}
		if len(win) == 0 {
			select {
			case <-e.set.in.Queued():
			case <-e.set.poke:
			case <-resume:
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		if l := time.Duration(e.cfg.LingerMS) * time.Millisecond; l > 0 && len(win) < e.cfg.BatchSize {
			if young := time.Unix(0, win[0].h.At).Add(l).Sub(e.set.now()); young > 0 {
				if e.set.wait(ctx, young) != nil {
					return
				}
				continue
			}
		}
		outs, err := e.send(ctx, win)
		if err != nil {
			return
		}
		_, fail, err := e.settle(ctx, ln, start, win, outs)
		if err != nil {
			if ctx.Err() == nil {
				e.set.log.Error("export: store the cursor", "export", e.cfg.Name, "err", err)
			}
			return
		}
		if fail == nil {
			backoff = backoffMin
			e.setState(StateConnected, "")
			continue
		}
		e.Failures.Add(1)
		e.setState(StateBackingOff, fmt.Sprint(fail.Err))
		wait := max(backoff/2+rand.N(backoff/2+1), fail.RetryAfter)
		e.set.log.Warn("export: upstream unreachable; will retry", "export", e.cfg.Name, "err", fail.Err, "retry_in", wait)
		if e.set.wait(ctx, wait) != nil {
			return
		}
		backoff = min(backoff*2, max(maxBackoff, backoffMin))
	}
}

func (e *Export) setState(s, err string) {
	e.mu.Lock()
	e.ok = s == StateConnected
	if !e.cur.Paused {
		e.state = s
	}
	e.lastErr = err
	e.mu.Unlock()
}

// next reads the next window: the live lane's first, then the backlog's.
// It merges the lanes when the backlog is done and splits a single lane
// whose oldest batch waits longer than liveAfter (live_first, connected).
func (e *Export) next(ctx context.Context) (lane, pos, []entry, error) {
	e.mu.Lock()
	c, connected := e.cur, e.ok
	e.mu.Unlock()
	read := func(from uint64, to uint64) (win []entry, endp pos, err error) {
		err = e.set.db.View(func(tx *store.Tx) error {
			endp = end(tx)
			seqs, vals := tier1.OutboxFrom(tx, from, e.cfg.BatchSize, e.windowBytes())
			for i, v := range vals {
				if seqs[i] >= to {
					break
				}
				h, b, ok := tier1.ParseOutboxEntry(v)
				if !ok {
					return fmt.Errorf("log entry %d has no header", seqs[i])
				}
				win = append(win, entry{seq: seqs[i], h: h, batch: b})
			}
			return nil
		})
		return win, endp, err
	}
	if c.Split {
		win, _, err := read(c.LiveHigh.Seq, ^uint64(0))
		if err != nil || len(win) > 0 {
			return laneLive, c.LiveHigh, win, err
		}
		if win, _, err = read(c.Low.Seq, c.LiveFrom.Seq); err != nil || len(win) > 0 {
			return laneLow, c.Low, win, err
		}
		// The backlog is done: one lane again from the live lane's place
		// (what is missing before it was pruned: dropped).
		return laneLow, c.Low, nil, e.commit(ctx, func(n *cursor) {
			n.Dropped += n.LiveFrom.Frames - n.Low.Frames
			n.Low, n.Split, n.LiveFrom, n.LiveHigh = n.LiveHigh, false, pos{}, pos{}
		}, nil)
	}
	win, endp, err := read(c.Low.Seq, ^uint64(0))
	if err != nil || len(win) == 0 {
		return laneLow, c.Low, nil, err
	}
	if e.cfg.Order == OrderLiveFirst && connected && e.set.now().Sub(time.Unix(0, win[0].h.At)) > liveAfter &&
		win[len(win)-1].seq+1 < endp.Seq {
		if err := e.commit(ctx, func(n *cursor) { n.Split, n.LiveFrom, n.LiveHigh = true, endp, endp }, nil); err != nil {
			return laneLow, c.Low, nil, err
		}
		e.set.log.Info("export: backlog; new batches go first", "export", e.cfg.Name, "backlog_frames", endp.Frames-c.Low.Frames)
	}
	return laneLow, c.Low, win, nil
}

// windowBytes bounds the batch bytes of one window: maxWindowBytes, and
// under a cap half a second's worth. A window is one take of the
// buckets, so a 10 s window of the wire stays within the cap plus a
// twentieth, and a live batch waits behind at most one backlog window
// and the half second of debt it leaves.
func (e *Export) windowBytes() int {
	n := maxWindowBytes
	for _, c := range []int64{e.capBPS.Load(), e.set.globalRate.Load()} {
		if c > 0 {
			n = min(n, int(c/2))
		}
	}
	return n
}

// commit applies change to a copy of the cursor, writes it (with the log
// entries every export is past deleted) and, once durable, keeps it.
func (e *Export) commit(ctx context.Context, change func(*cursor), also func(tx *store.Tx) error) error {
	e.mu.Lock()
	n := e.cur
	e.mu.Unlock()
	change(&n)
	var swept uint64
	err := e.set.db.Update(ctx, func(tx *store.Tx) error {
		e.mu.Lock()
		n.Paused = e.cur.Paused // Pause and Resume change it beside the runner
		e.mu.Unlock()
		if err := n.put(tx, e.cfg.Name); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx); err != nil {
				return err
			}
		}
		swept = e.set.minLow(e, n.Low.Seq)
		_, err := tier1.AckOutboxBefore(tx, swept, 4096)
		return err
	})
	if err != nil {
		return err
	}
	e.mu.Lock()
	n.Paused = e.cur.Paused
	e.cur = n
	e.mu.Unlock()
	// Another export may have committed beside this one, each seeing the
	// other's place before it moved: delete what both are past now.
	if m := e.set.minLow(nil, ^uint64(0)); m > swept {
		return e.set.db.Update(ctx, func(tx *store.Tx) error { _, err := tier1.AckOutboxBefore(tx, m, 4096); return err })
	}
	return nil
}

// skip is the outcome of a batch of a routine the export does not carry.
var skip = transport.Outcome{Class: transport.Class(255)}

// settle takes the outcomes of win (read from lane ln at start) in order
// up to the first failure: delivered ones count sent, refused ones
// dropped, other routines' skipped, gaps before them dropped; the lane's
// place moves past them in one transaction.
func (e *Export) settle(ctx context.Context, ln lane, start pos, win []entry, outs []transport.Outcome) (n int, fail *transport.Outcome, err error) {
	var sent, sentBytes, dropped, skipped uint64
	p := start
	for ; n < len(outs) && n < len(win); n++ {
		w := win[n]
		o := outs[n]
		if o.Class != transport.Delivered && o.Class != transport.Permanent && o.Class != transport.Negotiable && o.Class != skip.Class {
			fail = &outs[n]
			break
		}
		dropped += w.h.CumFrames - p.Frames // pruned before this export sent them
		switch o.Class {
		case transport.Delivered:
			e.sentBatches.Add(1)
			sent += uint64(w.h.Frames)
			sentBytes += uint64(len(w.batch))
		case transport.Permanent, transport.Negotiable:
			e.refusedBatches.Add(1)
			dropped += uint64(w.h.Frames)
			e.set.log.Error("export: upstream refused a batch for good; dropping it", "export", e.cfg.Name, "seq", w.seq, "err", o.Err)
		default:
			skipped += uint64(w.h.Frames)
		}
		p = after(w.seq, w.h, len(w.batch))
	}
	if n == 0 {
		return 0, fail, nil
	}
	err = e.commit(ctx, func(c *cursor) {
		if ln == laneLive {
			c.LiveHigh = p
		} else {
			c.Low = p
		}
		c.Sent += sent
		c.SentBytes += sentBytes
		c.Dropped += dropped
		c.Skipped += skipped
	}, nil)
	if err == nil && dropped > 0 {
		e.set.noteDrops(e.cfg.Name, dropped)
	}
	return n, fail, err
}

// message is the transport message of one stored batch.
func (e *Export) message(batch []byte) (*transport.Message, string, error) {
	r := wire.NewMsgpackReader(batch, wire.DefaultMsgpackLimits)
	if _, err := r.ReadArrayHeader(); err != nil {
		return nil, "", fmt.Errorf("stored batch: %w", err)
	}
	capID, err := r.ReadString()
	if err != nil {
		return nil, "", fmt.Errorf("stored batch: routine id: %w", err)
	}
	h := map[string]string{transport.HeaderRoutine: capID, transport.HeaderSourceAgent: e.set.source}
	if e.cfg.Token != "" {
		h[transport.HeaderAuthorization] = "Bearer " + e.cfg.Token
	}
	return &transport.Message{Kind: transport.Batch, To: e.cfg.Endpoint, Body: batch,
		ContentType: wire.ContentMsgpack, Header: h, MaxReply: 4096}, capID, nil
}

// coding is the content coding the next batches go in: the export's
// choice among what the upstream announced (identity: plain).
func (e *Export) coding() string {
	if e.cfg.Compression == CompressionOff || !strings.HasPrefix(e.cfg.Endpoint, "http") {
		return bodycodec.Identity
	}
	a := e.announced.Load()
	if a == nil {
		return bodycodec.Identity
	}
	return bodycodec.Pick(*a, e.cfg.Compression)
}

// compress puts m's body in coding (not identity).
func (e *Export) compress(m *transport.Message, coding string) error {
	z, err := e.set.enc.Encode(nil, coding, m.Body)
	if err != nil {
		return err
	}
	m.Body = z
	m.Header[headerContentEncoding] = coding
	return nil
}

const headerContentEncoding = "Content-Encoding"

// heard keeps what an answer announced (its Accept-Encoding, or none: an
// upstream that stops announcing gets plain batches again).
func (e *Export) heard(o *transport.Outcome) {
	if o.Status == 0 || !strings.HasPrefix(e.cfg.Endpoint, "http") {
		return
	}
	a := o.ReplyHeader["Accept-Encoding"]
	if old := e.announced.Load(); old == nil || *old != a {
		e.announced.Store(&a)
	}
}

// wireOverhead estimates the bytes a message costs on the wire beyond its
// body and headers (request line, framing, the answer).
func (e *Export) wireOverhead() int {
	switch {
	case strings.HasPrefix(e.cfg.Endpoint, "ws"):
		return 16
	case strings.HasPrefix(e.cfg.Endpoint, "mqtt"):
		return 64
	}
	return 200
}

func wireBytes(m *transport.Message, overhead int) int {
	n := len(m.Body) + overhead
	for k, v := range m.Header {
		n += len(k) + len(v) + 4
	}
	return n
}

// send offers the window (its carried batches; one at a time unless the
// wire is a ManySender) after the bandwidth caps let its bytes go. It
// returns one outcome per batch up to the first failure.
func (e *Export) send(ctx context.Context, win []entry) ([]transport.Outcome, error) {
	outs := make([]transport.Outcome, 0, len(win))
	var ms []*transport.Message
	var idx []int
	bytes := 0
	coding := e.coding()
	for i, w := range win {
		m, capID, err := e.message(w.batch)
		if err == nil && coding != bodycodec.Identity {
			err = e.compress(m, coding)
		}
		switch {
		case err != nil:
			outs = append(outs, transport.Refused(err))
		case e.routines != nil && !e.routines[capID]:
			outs = append(outs, skip)
		default:
			outs = append(outs, transport.Outcome{})
			ms, idx = append(ms, m), append(idx, i)
			bytes += wireBytes(m, e.wireOverhead())
		}
	}
	if len(ms) == 0 {
		return outs, nil
	}
	if err := own(ctx, &e.own, &e.ownMu, e.set.now, bytes); err != nil {
		return nil, err
	}
	if err := e.set.global.take(ctx, e.cfg.Priority, bytes); err != nil {
		return nil, err
	}
	got := e.transmit(ctx, ms)
	delivered := 0
	for j, o := range got {
		outs[idx[j]] = o
		e.heard(&o)
		if o.Class == transport.Delivered {
			delivered += wireBytes(ms[j], e.wireOverhead())
			e.rawBytes.Add(uint64(len(win[idx[j]].batch)))
			e.wireBytes.Add(uint64(len(ms[j].Body)))
		}
	}
	e.rate.add(e.set.now(), delivered)     // what reached the upstream
	for j := len(got); j < len(idx); j++ { // not tried: after a failure
		outs[idx[j]] = transport.Unreachable(fmt.Errorf("export: not sent after a failure"))
	}
	return outs, nil
}

// transmit sends ms in order and returns their outcomes up to and with
// the first failure.
func (e *Export) transmit(ctx context.Context, ms []*transport.Message) []transport.Outcome {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if many := e.set.manySender(e.cfg.Endpoint); many != nil {
		outs := many.SendMany(ctx, ms)
		if len(outs) != len(ms) { // a broken ManySender: nothing is taken as sent
			return []transport.Outcome{transport.Unreachable(fmt.Errorf("export: %d outcomes for %d batches", len(outs), len(ms)))}
		}
		return outs
	}
	var outs []transport.Outcome
	for _, m := range ms {
		o := e.set.t.Send(ctx, m)
		outs = append(outs, o)
		if o.Class == transport.Retry {
			break
		}
	}
	return outs
}
