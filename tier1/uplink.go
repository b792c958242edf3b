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

// Uplink forwards stored batches to an upstream agent, oldest first, one at
// a time, through a transport.Transport (as Batch messages). A batch leaves
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
// agent's URL) as agent source, sending through t.
func NewUplink(in *Ingestor, db *store.DB, t transport.Transport, endpoint, token, source string, log *slog.Logger) *Uplink {
	return &Uplink{in: in, db: db, t: t, endpoint: endpoint, token: token, source: source,
		log: log, MaxBackoff: uplinkBackoffMax,
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

// Run forwards until ctx is done.
func (u *Uplink) Run(ctx context.Context) {
	backoff := min(uplinkBackoffMin, u.MaxBackoff)
	for ctx.Err() == nil {
		var seqs []uint64
		var batches [][]byte
		_ = u.db.View(func(tx *store.Tx) error {
			seqs, batches = tx.T1Outbox(64)
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
		for i, b := range batches {
			o := u.send(ctx, b)
			retry := false
			switch o.Class {
			case transport.Delivered:
				u.Sent.Add(1)
			case transport.Permanent, transport.Negotiable:
				u.Dropped.Add(1)
				u.log.Error("upstream refused a batch for good; dropping it", "seq", seqs[i], "err", o.Err)
			default:
				u.Failures.Add(1)
				wait := max(backoff/2+rand.N(backoff/2+1), o.RetryAfter)
				u.log.Warn("uplink: upstream unreachable; will retry", "err", o.Err, "retry_in", wait)
				if u.Wait(ctx, wait) != nil {
					return
				}
				backoff = min(backoff*2, u.MaxBackoff)
				retry = true
			}
			if retry {
				break
			}
			backoff = min(uplinkBackoffMin, u.MaxBackoff)
			seq := seqs[i]
			if err := u.db.Update(ctx, func(tx *store.Tx) error { return tx.T1Ack(seq) }); err != nil {
				return
			}
		}
	}
}

// send offers one stored batch to the upstream.
func (u *Uplink) send(ctx context.Context, batch []byte) transport.Outcome {
	// The routine id is the batch's first string.
	r := wire.NewMsgpackReader(batch, wire.DefaultMsgpackLimits)
	if _, err := r.ReadArrayHeader(); err != nil {
		return transport.Refused(fmt.Errorf("stored batch: %w", err))
	}
	capID, err := r.ReadString()
	if err != nil {
		return transport.Refused(fmt.Errorf("stored batch: routine id: %w", err))
	}
	h := map[string]string{transport.HeaderRoutine: capID, transport.HeaderSourceAgent: u.source}
	if u.token != "" {
		h[transport.HeaderAuthorization] = "Bearer " + u.token
	}
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return u.t.Send(ctx, &transport.Message{Kind: transport.Batch, To: u.endpoint, Body: batch,
		ContentType: wire.ContentMsgpack, Header: h, MaxReply: 4096})
}
