package tier1

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Uplink forwards stored batches to an upstream agent or a broker, oldest
// first, through a transport.Transport (as Batch messages): one at a
// time, or a window of them in flight when the wire keeps their order
// (ManySender: the MQTT and WebSocket wires). A batch leaves
// the outbox only after the upstream acknowledged it (which it does only
// once the batch is durable there), so frames survive offline periods and
// restarts on either side. Each forwarded batch carries batch_id
// "u<outbox seq>" and the header X-Synapse-Source-Agent, and the upstream
// deduplicates on (source agent, batch_id): a batch sent again after a
// lost acknowledgement is stored once.
//
// The outcome of each attempt decides: Delivered acknowledges the batch;
// Permanent or Negotiable (the upstream will never take it: malformed, too
// large, a routine it lacks) drops it with an error in the log; Retry
// waits (a jittered back-off that doubles up to MaxBackoff, or the
// upstream's Retry-After when longer) and sends the same batch again.
type Uplink struct {
	in       *Ingestor
	db       *store.DB
	t        transport.Transport
	endpoint string
	token    string
	source   string
	log      *slog.Logger

	// MaxBackoff caps the wait between attempts (default 30 s).
	MaxBackoff time.Duration
	// Window is how many batches go out together to a wire that is a
	// ManySender (default DefaultWindow).
	Window int
	// Wait waits d or until ctx is done (then it returns ctx's error).
	// The default uses a timer; tests replace it.
	Wait func(ctx context.Context, d time.Duration) error

	Sent, Dropped, Failures atomic.Uint64
}

// HeaderSourceAgent names the agent a forwarded batch comes from.
const HeaderSourceAgent = transport.HeaderSourceAgent

// UplinkBackoff bounds the wait between attempts while the upstream is
// unreachable; sendTimeout bounds one attempt.
const (
	uplinkBackoffMin = 500 * time.Millisecond
	uplinkBackoffMax = 30 * time.Second
	sendTimeout      = 30 * time.Second
)

// NewUplink builds the forwarder of in's outbox to endpoint (the upstream
// agent's URL: http(s):// for a POST per batch, ws(s):// for its
// WebSocket stream; "mqtt://" for the broker) as agent source, sending
// through t.
func NewUplink(in *Ingestor, db *store.DB, t transport.Transport, endpoint, token, source string, log *slog.Logger) *Uplink {
	u := &Uplink{in: in, db: db, t: t, endpoint: endpoint, token: token, source: source,
		log: log, MaxBackoff: uplinkBackoffMax, Window: DefaultWindow,
		Wait: func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	return u
}

// Pending counts the batches waiting to go up.
func (u *Uplink) Pending() int {
	n := 0
	_ = u.db.View(func(tx *store.Tx) error { n = tx.T1OutboxLen(); return nil })
	return n
}

// Lag is the age of the oldest frame waiting to go up, by its ts field
// (0 when nothing waits or its routine has no ts field).
func (u *Uplink) Lag() time.Duration {
	var raw []byte
	_ = u.db.View(func(tx *store.Tx) error {
		if _, bs := tx.T1Outbox(1); len(bs) > 0 {
			raw = bs[0] // a copy
		}
		return nil
	})
	if raw == nil {
		return 0
	}
	b, err := DecodeBatch(raw, u.in.reg, u.in.cfg.Limits)
	if err != nil {
		return 0
	}
	kts := u.in.keys[b.CapabilityID].ts
	if kts < 0 || len(b.Frames) == 0 {
		return 0
	}
	oldest := int64(math.MaxInt64)
	for _, f := range b.Frames {
		if v := f.At(kts); v.Kind() == KindInt {
			oldest = min(oldest, v.Int())
		}
	}
	if oldest == math.MaxInt64 {
		return 0
	}
	return max(u.in.cfg.Now().Sub(time.Unix(0, oldest)), 0)
}

// ManySender is a wire that can carry several batches in flight at once
// and keeps their order (the MQTT transport: one client's QoS 1
// publishes, which the broker forwards in order). SendMany returns one
// outcome per message, in order.
type ManySender interface {
	SendMany(ctx context.Context, ms []*transport.Message) []transport.Outcome
}

// DefaultWindow is how many batches go out together to a ManySender.
const DefaultWindow = 32

// Run forwards until ctx is done. To a wire that is a ManySender (the
// transport itself, or the one a transport.Mux picks for the endpoint)
// up to Window batches go out together and those acknowledged are removed
// from the queue in one transaction; to any other wire one batch at a
// time, each removed in its own. Either way the order holds and a batch
// after a failed one is sent again (at least once: the upstream or the
// consumer deduplicates on batch_id).
func (u *Uplink) Run(ctx context.Context) {
	backoff := min(uplinkBackoffMin, u.MaxBackoff)
	for ctx.Err() == nil {
		many := u.manySender()
		limit := 64
		if many != nil {
			limit = max(u.Window, 1)
		}
		var seqs []uint64
		var batches [][]byte
		_ = u.db.View(func(tx *store.Tx) error {
			seqs, batches = tx.T1Outbox(limit)
			return nil
		})
		if len(seqs) == 0 {
			select {
			case <-u.in.Queued():
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		var fail *transport.Outcome
		var err error
		if many != nil {
			_, fail, err = u.settle(ctx, seqs, u.sendMany(ctx, many, batches))
		} else {
			for i, b := range batches {
				if _, fail, err = u.settle(ctx, seqs[i:i+1], []transport.Outcome{u.send(ctx, b)}); err != nil || fail != nil {
					break
				}
			}
		}
		if err != nil {
			return
		}
		if fail == nil {
			backoff = min(uplinkBackoffMin, u.MaxBackoff)
			continue
		}
		u.Failures.Add(1)
		wait := max(backoff/2+rand.N(backoff/2+1), fail.RetryAfter)
		u.log.Warn("uplink: upstream unreachable; will retry", "err", fail.Err, "retry_in", wait)
		if u.Wait(ctx, wait) != nil {
			return
		}
		backoff = min(backoff*2, u.MaxBackoff)
	}
}

// manySender is the wire of the endpoint if it is a ManySender.
func (u *Uplink) manySender() ManySender {
	w := u.t
	if m, ok := w.(interface {
		For(to string) (transport.Transport, error)
	}); ok {
		if t, err := m.For(u.endpoint); err == nil {
			w = t
		}
	}
	ms, _ := w.(ManySender)
	return ms
}

// settle takes the outcomes of the batches seqs in order up to the first
// failure (Retry): delivered ones are counted sent, refused ones dropped,
// and all of those leave the queue in one transaction. It returns how
// many left, and the failure if there was one (err: the store failed).
func (u *Uplink) settle(ctx context.Context, seqs []uint64, outs []transport.Outcome) (n int, fail *transport.Outcome, err error) {
outcomes:
	for ; n < len(outs); n++ {
		switch o := outs[n]; o.Class {
		case transport.Delivered:
			u.Sent.Add(1)
		case transport.Permanent, transport.Negotiable:
			u.Dropped.Add(1)
			u.log.Error("upstream refused a batch for good; dropping it", "seq", seqs[n], "err", o.Err)
		default:
			fail = &outs[n]
			break outcomes
		}
	}
	if n == 0 {
		return 0, fail, nil
	}
	err = u.db.Update(ctx, func(tx *store.Tx) error {
		for _, seq := range seqs[:n] {
			if err := tx.T1Ack(seq); err != nil {
				return err
			}
		}
		return nil
	})
	return n, fail, err
}

// message is the transport message of one stored batch.
func (u *Uplink) message(batch []byte) (*transport.Message, error) {
	// The routine id is the batch's first string.
	r := wire.NewMsgpackReader(batch, wire.DefaultMsgpackLimits)
	if _, err := r.ReadArrayHeader(); err != nil {
		return nil, fmt.Errorf("stored batch: %w", err)
	}
	capID, err := r.ReadString()
	if err != nil {
		return nil, fmt.Errorf("stored batch: routine id: %w", err)
	}
	h := map[string]string{transport.HeaderRoutine: capID, transport.HeaderSourceAgent: u.source}
	if u.token != "" {
		h[transport.HeaderAuthorization] = "Bearer " + u.token
	}
	return &transport.Message{Kind: transport.Batch, To: u.endpoint, Body: batch,
		ContentType: wire.ContentMsgpack, Header: h, MaxReply: 4096}, nil
}

// send offers one stored batch to the upstream.
func (u *Uplink) send(ctx context.Context, batch []byte) transport.Outcome {
	m, err := u.message(batch)
	if err != nil {
		return transport.Refused(err)
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return u.t.Send(ctx, m)
}

// sendMany offers a window of stored batches to a ManySender; a batch
// whose routine cannot be read is refused, and those after it wait for
// the next window.
func (u *Uplink) sendMany(ctx context.Context, w ManySender, batches [][]byte) []transport.Outcome {
	ms := make([]*transport.Message, 0, len(batches))
	var bad *transport.Outcome
	for _, b := range batches {
		m, err := u.message(b)
		if err != nil {
			o := transport.Refused(err)
			bad = &o
			break
		}
		ms = append(ms, m)
	}
	var outs []transport.Outcome
	if len(ms) > 0 {
		ctx, cancel := context.WithTimeout(ctx, sendTimeout)
		outs = w.SendMany(ctx, ms)
		cancel()
		if len(outs) != len(ms) { // a broken ManySender: nothing is taken as sent
			return []transport.Outcome{transport.Unreachable(fmt.Errorf("uplink: %d outcomes for %d batches", len(outs), len(ms)))}
		}
	}
	if bad != nil {
		outs = append(outs, *bad)
	}
	return outs
}
