package tier1

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Uplink forwards stored batches to an upstream agent, oldest first, one at
// a time. A batch leaves the outbox only after the upstream acknowledged it
// (which it does only once the batch is durable there), so frames survive
// offline periods and restarts on either side. Each forwarded batch carries
// batch_id "u<outbox seq>" and the header X-Synapse-Source-Agent, and the
// upstream deduplicates on (source agent, batch_id): a batch sent again
// after a lost acknowledgement is stored once.
type Uplink struct {
	in       *Ingestor
	db       *store.DB
	endpoint string
	token    string
	source   string
	client   *http.Client
	log      *slog.Logger
	sleep    func(ctx context.Context, d time.Duration) error

	// MaxBackoff caps the wait between attempts (default 30 s).
	MaxBackoff time.Duration

	Sent, Dropped, Failures atomic.Uint64
}

// HeaderSourceAgent names the agent a forwarded batch comes from.
const HeaderSourceAgent = "X-Synapse-Source-Agent"

// UplinkBackoff bounds the wait between attempts while the upstream is
// unreachable.
const (
	uplinkBackoffMin = 500 * time.Millisecond
	uplinkBackoffMax = 30 * time.Second
)

// NewUplink builds the forwarder of in's outbox to endpoint (a base URL)
// as agent source.
func NewUplink(in *Ingestor, db *store.DB, endpoint, token, source string, log *slog.Logger) *Uplink {
	return &Uplink{in: in, db: db, endpoint: endpoint, token: token, source: source,
		client: &http.Client{Timeout: 30 * time.Second}, log: log, MaxBackoff: uplinkBackoffMax,
		sleep: func(ctx context.Context, d time.Duration) error {
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
			err := u.send(ctx, b)
			if err == errPermanent {
				u.Dropped.Add(1)
				u.log.Error("upstream refused a batch for good; dropping it", "seq", seqs[i])
			} else if err != nil {
				u.Failures.Add(1)
				u.log.Warn("uplink: upstream unreachable; will retry", "err", err, "retry_in", backoff)
				d := backoff/2 + rand.N(backoff/2+1)
				if u.sleep(ctx, d) != nil {
					return
				}
				backoff = min(backoff*2, u.MaxBackoff)
				break
			} else {
				u.Sent.Add(1)
			}
			backoff = min(uplinkBackoffMin, u.MaxBackoff)
			seq := seqs[i]
			if err := u.db.Update(ctx, func(tx *store.Tx) error { return tx.T1Ack(seq) }); err != nil {
				return
			}
		}
	}
}

var errPermanent = fmt.Errorf("upstream refused the batch permanently")

func (u *Uplink) send(ctx context.Context, batch []byte) error {
	// The routine id is the batch's first string.
	r := wire.NewMsgpackReader(batch, wire.DefaultMsgpackLimits)
	if _, err := r.ReadArrayHeader(); err != nil {
		return errPermanent
	}
	capID, err := r.ReadString()
	if err != nil {
		return errPermanent
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.endpoint+"/api/v1/synapse/tier1/"+capID, bytes.NewReader(batch))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", wire.ContentMsgpack)
	req.Header.Set(HeaderSourceAgent, u.source)
	if u.token != "" {
		req.Header.Set("Authorization", "Bearer "+u.token)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusBadRequest, resp.StatusCode == http.StatusRequestEntityTooLarge,
		resp.StatusCode == http.StatusForbidden && bytes.Contains(body, []byte(wire.CodeCapabilityLacking)):
		u.log.Error("upstream refused batch", "status", resp.StatusCode, "body", string(body))
		return errPermanent
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if s, err := strconv.Atoi(ra); err == nil && s > 0 && s < 3600 {
			_ = u.sleep(ctx, time.Duration(s)*time.Second)
		}
	}
	return fmt.Errorf("upstream answered %d: %s", resp.StatusCode, bytes.TrimSpace(body))
}
