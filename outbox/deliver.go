package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Peers is the peer protocol as the queue sees it; package peer
// implements it. The queue calls it for the destinations PeerDest makes,
// from their lanes: one round of a destination at a time.
type Peers interface {
	// ReadAhead is how many items a round to dest reads (0: the queue's
	// default, 64).
	ReadAhead(dest string) int
	// Window is how many due messages a round to dest may send (at
	// least 1), and whether at once (concurrent: the peer orders them)
	// or one after another.
	Window(dest string) (size int, concurrent bool)
	// Send delivers the items of one round to peer (the head first, in
	// queue order; concurrent as Window said) and returns their outcomes
	// in order, nil for each one delivered. It checks first that the
	// peer may be sent to (still paired).
	Send(ctx context.Context, dest, peer string, items []*Item, concurrent bool) []*Failure
}

// Failure is a failed delivery and what it means for retries.
type Failure struct {
	Err        error
	RetryAfter time.Duration
	// Unreachable: the destination could not be reached (or did not know
	// us yet); requeue when it is heard from again.
	Unreachable bool
	// Permanent: do not retry.
	Permanent bool
	// Code is the TPError code of the peer's refusal, if any.
	Code wire.ErrorCode
	// RefusedContract: the peer does not hold the contract the message
	// was sent under (recorded as revoked; a new one is negotiated).
	RefusedContract bool
}

func (e *Failure) Error() string { return e.Err.Error() }

// errNotSent is NotSent's error.
var errNotSent = errors.New("not sent: an earlier message failed")

// NotSent is the failure of an item of a sequential round after its first
// failure: retried with the round, nothing else known. Each call returns
// a Failure of its own, which the caller may change.
func NotSent() *Failure { return &Failure{Err: errNotSent} }

// FailureOf is what a delivery's outcome means for the outbox (nil when
// delivered). The transport classified it (transport.Classify): Retry is
// retried (Unreached: requeued when the peer is heard from again, once it
// gave up), Permanent and Negotiable are not (a message the peer refused
// under its contract was sent again under a new one already, by package
// peer).
func FailureOf(out transport.Outcome) *Failure {
	if out.Delivered() {
		return nil
	}
	d := &Failure{Err: out.Err, RetryAfter: out.RetryAfter}
	if out.Error != nil {
		d.Code = out.Error.Code
	}
	if out.Class == transport.Retry {
		d.Unreachable = out.Unreached
	} else {
		d.Permanent = true
	}
	return d
}

// send delivers the items of one round and returns their outcomes in
// order: to a peer through Peers, to a webhook one after another.
func (o *Queue) send(dest string, items []*Item, concurrent bool) []*Failure {
	if peer := items[0].Peer; peer != "" {
		if o.opts.Peers == nil {
			out := make([]*Failure, len(items))
			derr := &Failure{Err: fmt.Errorf("%s is not a paired peer", peer), Permanent: true}
			for i := range out {
				out[i] = derr
			}
			return out
		}
		return o.opts.Peers.Send(o.ctx, dest, peer, items, concurrent)
	}
	return SendInTurn(items, o.deliverHook)
}

// SendInTurn delivers items one after another with deliver, until one
// fails: those after it are NotSent.
func SendInTurn(items []*Item, deliver func(it *Item) *Failure) []*Failure {
	out := make([]*Failure, len(items))
	for i, it := range items {
		if i > 0 && out[i-1] != nil {
			out[i] = NotSent()
			continue
		}
		out[i] = deliver(it)
	}
	return out
}

// deliverHook sends one callback to its URL: a plain webhook, signed
// with Options.Secret when there is one, or a message of a type
// Options.Deliver holds (an A2A push).
func (o *Queue) deliverHook(it *Item) *Failure {
	ctx, cancel := context.WithTimeout(o.ctx, DeliveryTimeout)
	defer cancel()
	if d := o.opts.Deliver[it.Type]; d != nil {
		return d(ctx, it)
	}
	h := map[string]string{transport.HeaderMessageID: it.ID}
	if o.opts.Secret != nil {
		h[transport.HeaderSignature] = wire.SignHMAC(o.opts.Secret, o.clock.Now(), it.Payload)
	}
	return FailureOf(o.opts.Transport.Send(ctx, &transport.Message{Kind: transport.Callback, To: it.URL, Body: it.Payload,
		ContentType: wire.ContentJSON, Header: h, MaxReply: maxReply}))
}
