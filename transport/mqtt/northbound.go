package mqtt

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// Northbound publishes the agent's stored tier-1 batches to the broker,
// from the durable uplink queue (the store's t1_outbox, filled by the
// ingest in the transaction that stores a batch), oldest first. Each batch
// goes out as its exact queued msgpack bytes — [capability_id, version,
// [frame, ...], "u<seq>"] — to
// {prefix}/{system_id}/{agent_id}/tier1/{capability_id} at QoS 1, and
// leaves the queue only once the broker acknowledged it (PUBACK). Offline
// periods, broker restarts and agent restarts (kill -9 included) lose
// nothing the agent stored; a batch whose PUBACK was lost goes out again,
// so subscribers see a batch at least once and deduplicate on its
// batch_id, whose number also gives the order.
type Northbound struct {
	c        *Client
	db       *store.DB
	queued   <-chan struct{}
	topics   Topics
	systemID string
	agentID  string
	log      *slog.Logger

	// Window is how many batches may await their PUBACK at once
	// (default 32); they are taken off the queue in order.
	Window int
	// AckTimeout bounds the wait for one PUBACK while connected (default
	// 30 s); after it the window is sent again.
	AckTimeout time.Duration

	Sent, Dropped, Failures atomic.Uint64
}

// NewNorthbound builds the publisher of db's uplink queue through c, as
// agentID of systemID. queued is poked when a batch is queued
// (tier1.Ingestor.Queued).
func NewNorthbound(c *Client, db *store.DB, queued <-chan struct{}, systemID, agentID string) *Northbound {
	return &Northbound{c: c, db: db, queued: queued, topics: Topics{Prefix: c.opts.TopicPrefix},
		systemID: systemID, agentID: agentID, log: c.log.With("component", "mqtt-northbound"),
		Window: 32, AckTimeout: 30 * time.Second}
}

// Pending counts the batches waiting to go to the broker.
func (n *Northbound) Pending() int {
	k := 0
	_ = n.db.View(func(tx *store.Tx) error { k = tx.T1OutboxLen(); return nil })
	return k
}

// Run publishes until ctx is done.
func (n *Northbound) Run(ctx context.Context) {
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		if err := n.c.WaitUp(ctx); err != nil {
			return
		}
		var seqs []uint64
		var batches [][]byte
		_ = n.db.View(func(tx *store.Tx) error {
			seqs, batches = tx.T1Outbox(max(n.Window, 1))
			return nil
		})
		if len(seqs) == 0 {
			select {
			case <-n.queued:
			case <-time.After(5 * time.Second):
			case <-ctx.Done():
				return
			}
			continue
		}
		done, err := n.publish(ctx, batches)
		if done > 0 {
			backoff = 500 * time.Millisecond
			if uerr := n.db.Update(ctx, func(tx *store.Tx) error {
				for _, s := range seqs[:done] {
					if err := tx.T1Ack(s); err != nil {
						return err
					}
				}
				return nil
			}); uerr != nil {
				return
			}
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			n.Failures.Add(1)
			d := backoff/2 + rand.N(backoff/2+1)
			n.log.Warn("mqtt: a batch was not acknowledged by the broker; will send again", "err", err, "retry_in", d)
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			backoff = min(backoff*2, 30*time.Second)
		}
	}
}

// publish sends batches in order and waits for their PUBACKs in order; it
// returns how many of the first ones are acknowledged (or dropped for
// good: a batch that names no valid topic).
func (n *Northbound) publish(ctx context.Context, batches [][]byte) (int, error) {
	toks := make([]paho.Token, len(batches))
	for i, b := range batches {
		topic, err := n.topic(b)
		if err != nil {
			n.log.Error("mqtt: a queued batch cannot be published; dropping it", "err", err)
			continue // toks[i] stays nil: dropped
		}
		toks[i] = n.c.publishAsync(topic, b)
	}
	for i, tok := range toks {
		if tok == nil {
			n.Dropped.Add(1)
			continue
		}
		if err := n.waitAck(ctx, tok); err != nil {
			return i, err
		}
		if err := tok.Error(); err != nil {
			return i, err
		}
		n.Sent.Add(1)
	}
	return len(batches), nil
}

// waitAck waits for tok's PUBACK. While the link is down the client
// sends the message again by itself once it is back, so only a silence of
// AckTimeout while connected counts as lost.
func (n *Northbound) waitAck(ctx context.Context, tok paho.Token) error {
	t := time.NewTimer(n.AckTimeout)
	defer t.Stop()
	for {
		select {
		case <-tok.Done():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if n.c.pc.IsConnectionOpen() {
				return errors.New("no PUBACK within the ack timeout")
			}
			t.Reset(n.AckTimeout)
		}
	}
}

// topic is the batch's topic, from its first element (the capability id).
func (n *Northbound) topic(batch []byte) (string, error) {
	r := wire.NewMsgpackReader(batch, wire.DefaultMsgpackLimits)
	if _, err := r.ReadArrayHeader(); err != nil {
		return "", err
	}
	capID, err := r.ReadString()
	if err != nil {
		return "", err
	}
	return n.topics.Tier1(n.systemID, n.agentID, capID)
}
