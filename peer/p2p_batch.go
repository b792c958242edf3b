package peer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/outbox"
	"github.com/synapse-edge/synapse/peer/batch"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// Batches of envelopes: many outbox messages in one request, one answer
// for all of them (pipelining, p2p_order.go).
//
// A receiver that takes batches says so in every answer to POST /message
// with the header X-Synapse-Batch: N (the most envelopes one batch may
// hold). A sender that has seen it (over http or https) may then send a
// round's messages as batches to POST /api/v1/synapse/message/batch, a
// JSON body
//
//	{"messages":[{"seq":N,"prev":P,"envelope":{...}}, ...]}
//
// where each envelope is exactly what POST /message would have carried
// (signed, JSON) and seq/prev are the values of X-Synapse-Seq and
// X-Synapse-Seq-Prev (prev 0 or absent: none). Every envelope of a batch
// has the same sender; a peer sharing an HMAC secret signs the batch body
// in X-Synapse-Signature. The receiver handles each envelope as POST
// /message would (checks, the sender's order, duplicates), lets all of
// them share its group commits, and answers 200 once every effect is
// durable, with one result per envelope, in order:
//
//	{"results":[{"status":202,"body":{"accepted":true,...}}, {"status":503,"error":{...},"retry_after_ms":1000}, ...]}
//
// status, body (JSON) and error are what POST /message would have answered
// for that envelope alone: the sender classifies each result as it would
// that answer. A batch that cannot be read at all is refused as a whole
// (400); the sender then goes back to one message per request for that
// peer, so nothing depends on batches being understood. A receiver that
// does not know batches never announces them and is sent single messages.
// Over MQTT messages go one by one (the wire carries one envelope per
// frame): the receiver there does not announce batches.
//
// Batch signatures: a receiver that also answers X-Synapse-Batch-Signing:
// ed25519 takes batches signed as a whole. A sender that has seen it sends
// the envelopes of a batch without their own signatures and signs the
// body once (wire.SignBatch) in X-Synapse-Batch-Signature; the receiver
// verifies that with the key pinned for the batch's one sender — a batch
// that does not verify is refused as a whole (401 TP-ID003) — and then
// takes its envelopes as signed. Each envelope is checked as before
// otherwise (receiver, timestamp, message id, contract). Against peers
// that do not announce it every envelope keeps its own signature, and an
// envelope without one is refused outside such a batch, so nothing
// changes for them; the cost of Ed25519 (a verification costs about as
// much as the rest of an envelope's handling) is paid once per batch
// instead of once per envelope.

// Batch wire names.
const (
	// HeaderBatch, in an answer, announces batches: the most envelopes
	// one may hold.
	HeaderBatch = "X-Synapse-Batch"
	// BatchPath is the route of batches.
	BatchPath = MessagePath + "/batch"
	// MaxBatch is the most envelopes this agent takes in one batch.
	MaxBatch = 256
	// HeaderBatchSigning, in an answer, announces batches signed as a
	// whole: its value is BatchSigningEd25519.
	HeaderBatchSigning  = "X-Synapse-Batch-Signing"
	BatchSigningEd25519 = "ed25519"
	// HeaderBatchSignature carries the signature of a batch signed as a
	// whole (wire.SignBatch).
	HeaderBatchSignature = "X-Synapse-Batch-Signature"
)

// batchBytes bounds the body of a batch this agent sends (a receiver's
// default body limit is 1 MiB); one message larger than that goes alone.
const batchBytes = 512 << 10

// maxBatchAnswer bounds the part of a batch's answer that is read.
const maxBatchAnswer = 4 << 20

// msDuration is ms milliseconds.
func msDuration(ms int64) time.Duration {
	return time.Duration(min(ms, int64(transport.MaxRetryAfter/time.Millisecond))) * time.Millisecond
}

// The batch documents (package batch).
type (
	BatchItem    = batch.Item
	BatchRequest = batch.Request
	BatchResult  = batch.Result
	BatchAnswer  = batch.Answer
)

// ReceiveBatch handles a batch (a JSON BatchRequest; signature is its
// X-Synapse-Signature header, batchSig its X-Synapse-Batch-Signature) and
// returns the answer to send with 200 once every envelope's effects are
// durable. A batch that cannot be read, or whose batch signature does not
// verify, is refused as a whole (*wire.Error).
func (ib *Inbound) ReceiveBatch(ctx context.Context, body []byte, signature, batchSig string) (*BatchAnswer, error) {
	if !ib.n.ready() {
		return nil, wire.Errorf(wire.CodeAgentNotReady, "")
	}
	req, err := batch.DecodeRequest(body)
	if err != nil {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "batch: %v", err)
	}
	if len(req.Messages) == 0 || len(req.Messages) > MaxBatch {
		return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "a batch holds 1 to %d envelopes, not %d", MaxBatch, len(req.Messages))
	}
	msgs := make([]*wire.UnifiedSynapseMessage, len(req.Messages))
	for i, it := range req.Messages {
		if it.Seq == 0 || it.Prev >= it.Seq {
			return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "batch message %d: seq %d, prev %d: want 0 <= prev < seq", i, it.Seq, it.Prev)
		}
		m, err := wire.DecodeEnvelope(it.Envelope, false)
		if err != nil {
			return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "batch message %d: %v", i, wire.AsError(err).Message)
		}
		if i > 0 && m.Sender.AgentID != msgs[0].Sender.AgentID {
			return nil, wire.Errorf(wire.CodeMessageFormatInvalid, "batch message %d is from %q, not %q: a batch has one sender", i, m.Sender.AgentID, msgs[0].Sender.AgentID)
		}
		msgs[i] = m
	}
	if err := ib.CheckTransportSignature(msgs[0].Sender.AgentID, signature, body); err != nil {
		return nil, err
	}
	// The HMAC covered the whole body: Deliver does not look for one per
	// envelope.
	ctx = context.WithValue(ctx, hmacCheckedKey{}, msgs[0].Sender.AgentID)
	if batchSig != "" {
		var err error
		if ctx, err = ib.verifyBatch(ctx, msgs[0], body, batchSig); err != nil {
			return nil, err
		}
	}
	ib.n.m.batchesIn.Inc()
	// Each envelope on its own goroutine, started in order: the sender's
	// order (p2p_order.go) lets the next go once the previous one's write
	// is queued, so the batch shares the store's commits.
	out := &BatchAnswer{Results: make([]BatchResult, len(msgs))}
	held := ib.holdBatch(len(msgs)) // one commit for the batch (p2p_order.go)
	var wg sync.WaitGroup
	for i := range msgs {
		it := req.Messages[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			ectx, done := held.envelope(ctx)
			a, _ := ib.Deliver(ectx, &transport.Inbound{Kind: transport.Envelope, Body: []byte(it.Envelope), ContentType: wire.ContentJSON,
				Header: map[string]string{HeaderSeq: strconv.FormatUint(it.Seq, 10), HeaderSeqPrev: strconv.FormatUint(it.Prev, 10)}})
			done()
			out.Results[i] = batchResult(a)
		}()
	}
	wg.Wait()
	return out, nil
}

// batchSignedKey is the context key of the sender whose batch signature
// verified (a string): its envelopes in that batch count as signed.
type batchSignedKey struct{}

// verifyBatch checks the batch signature of a batch whose first envelope
// is first and returns ctx marked for its sender. An unpaired sender is
// left to Deliver, which refuses its envelopes.
func (ib *Inbound) verifyBatch(ctx context.Context, first *wire.UnifiedSynapseMessage, body []byte, sig string) (context.Context, error) {
	sender := first.Sender.AgentID
	p := ib.n.pairing.peers.get(sender)
	if p == nil {
		return ctx, nil
	}
	if err := wire.VerifyBatch(p.pub, sender, ib.a.Identity().AgentID, body, sig); err != nil {
		ib.a.Audit(agent.AuditSignatureFailed, sender, map[string]any{"batch": true, "error": err.Error()})
		ib.n.m.refused.With(string(wire.CodeIDUnknownSender)).Add(1)
		return nil, wire.Errorf(wire.CodeIDUnknownSender, "%v", err).With("sender", sender)
	}
	return context.WithValue(ctx, batchSignedKey{}, sender), nil
}

// verify checks the signature of m from p: its own, unless it came in a
// batch from p whose signature verified.
func (ib *Inbound) verify(ctx context.Context, m *wire.UnifiedSynapseMessage, p *peer) error {
	if s, ok := ctx.Value(batchSignedKey{}).(string); ok && s == m.Sender.AgentID && s == p.rec.AgentID {
		return nil
	}
	return wire.Verify(m, p.pub)
}

// appendJSON appends a as JSON (as wire.JSON writes it).
func (a *Accepted) appendJSON(b []byte) []byte {
	b = append(b, `{"accepted":`...)
	b = strconv.AppendBool(b, a.Accepted)
	b = append(b, `,"message_id":`...)
	b = wire.AppendJSONString(b, a.MessageID, false)
	if a.Duplicate {
		b = append(b, `,"duplicate":true`...)
	}
	if a.Code != "" {
		b = append(b, `,"code":`...)
		b = wire.AppendJSONString(b, string(a.Code), false)
	}
	return append(b, '}')
}

// batchResult is Deliver's answer to one envelope as a result.
func batchResult(a transport.Answer) BatchResult {
	if a.Error != nil {
		return BatchResult{Status: a.Status, Error: a.Error, RetryAfterMS: a.RetryAfter.Milliseconds()}
	}
	return BatchResult{Status: a.Status, Body: a.Body}
}

// ---- sending ----

// batchable tells whether a round to dest may go as batches, and how many
// envelopes one may hold (0: not).
func (o *deliverer) batchable(dest string, p *peer) int {
	o.mu.Lock()
	max := o.batches[dest].max
	o.mu.Unlock()
	if max <= 0 || p == nil {
		return 0
	}
	if u, err := url.Parse(p.rec.Endpoint); err != nil || u.Scheme != "http" && u.Scheme != "https" {
		return 0
	}
	return max
}

// heardAnswer records what an answer of dest announced: ordering, and
// batches (their absence turns batches off).
func (o *deliverer) heardAnswer(dest string, out transport.Outcome) {
	if out.Status == 0 {
		return
	}
	max, _ := strconv.Atoi(out.ReplyHeader[HeaderBatch])
	max = min(max, MaxBatch)
	o.mu.Lock()
	defer o.mu.Unlock()
	if ordered(out) {
		o.ordered[dest] = true
	}
	if off, ok := o.batchesOff[dest]; ok && o.n.clock.Now().Sub(off) < batchOffFor {
		max = 0
	}
	if max > 0 && ordered(out) {
		o.batches[dest] = batchTerms{max: max, signed: out.ReplyHeader[HeaderBatchSigning] == BatchSigningEd25519}
	} else {
		delete(o.batches, dest)
	}
}

// batchTerms is what a peer announced of batches: the most envelopes one
// may hold, and whether it takes them signed as a whole.
type batchTerms struct {
	max    int
	signed bool
}

// batchOffFor is how long a peer that refused a batch as a whole is sent
// single messages, whatever it announces.
const batchOffFor = 10 * time.Minute

// batchOff stops batches to dest for batchOffFor.
func (o *deliverer) batchOff(dest string) {
	o.mu.Lock()
	delete(o.batches, dest)
	o.batchesOff[dest] = o.n.clock.Now()
	o.mu.Unlock()
	o.log.Warn("the peer refused a batch: sending one message per request", "dest", dest, "for", batchOffFor)
}

// sendBatches sends the items of a round (in queue order, the head first)
// as batches of at most max envelopes, at once, chained by their
// sequence numbers, and returns their outcomes in order.
func (o *deliverer) sendBatches(ctx context.Context, dest string, p *peer, items []*outbox.Item, max int) []*outbox.Failure {
	out := make([]*outbox.Failure, len(items))
	var wg sync.WaitGroup
	for start := 0; start < len(items); {
		end := min(start+max, len(items))
		var prev uint64
		if start > 0 {
			prev = items[start-1].Seq
		}
		wg.Add(1)
		go func(start, end int, prev uint64) {
			defer wg.Done()
			copy(out[start:end], o.deliverBatch(ctx, dest, p, items[start:end], prev, true))
		}(start, end, prev)
		start = end
	}
	wg.Wait()
	return out
}

// errBatchAnswer is a batch answer that does not fit its batch.
var errBatchAnswer = errors.New("the peer's batch answer does not match the batch")

// deliverBatch sends items (consecutive in the queue; prev is the
// sequence number of the one before the first, 0 when none) in one or
// more batches under the active contract and returns their outcomes.
// When the peer refused the contract (and renegotiate is set), the
// messages from the first refused one on are sent once more, under a new
// contract.
func (o *deliverer) deliverBatch(ctx context.Context, dest string, p *peer, items []*outbox.Item, prev uint64, renegotiate bool) []*outbox.Failure {
	out := o.deliverBatchOnce(ctx, dest, p, items, prev)
	for k, d := range out {
		if d == nil {
			continue
		}
		if renegotiate && d.RefusedContract {
			if k > 0 {
				prev = items[k-1].Seq
			}
			copy(out[k:], o.deliverBatch(ctx, dest, p, items[k:], prev, false))
		}
		break
	}
	return out
}

// deliverBatchOnce is one try of deliverBatch.
// base is the queue's context: each try has its own deliveryTimeout.
func (o *deliverer) deliverBatchOnce(base context.Context, dest string, p *peer, items []*outbox.Item, prev uint64) []*outbox.Failure {
	out := make([]*outbox.Failure, len(items))
	fill := func(from int, derr *outbox.Failure) {
		for i := from; i < len(out); i++ {
			out[i] = derr
		}
	}
	ctx, cancel := context.WithTimeout(base, deliveryTimeout)
	defer cancel()
	n := o.n
	peerID := p.rec.AgentID
	seq := func(i int) Sequence {
		s := Sequence{Seq: items[i].Seq, Prev: prev}
		if i > 0 {
			s.Prev = items[i-1].Seq
		}
		return s
	}
	// The batch goes under one contract: the first message that needs one
	// finds it (negotiated first when there is none) and the others are
	// sealed under it.
	var c *negotiate.Contract
	found := false
	cid := ""
	o.mu.Lock()
	signed := o.batches[dest].signed
	o.mu.Unlock()
	req := BatchRequest{Messages: make([]BatchItem, 0, len(items))}
	size := 0
	for i, it := range items {
		if i > 0 && size >= batchBytes {
			// Full: this batch first, the rest in the next one.
			o.postBatch(ctx, dest, p, cid, signed, &req, out[:i])
			if failedAt(out[:i]) {
				fill(i, outbox.NotSent())
				return out
			}
			copy(out[i:], o.deliverBatchOnce(base, dest, p, items[i:], items[i-1].Seq))
			return out
		}
		pl, err := wire.RawJSONPayload(it.Payload)
		var m *wire.UnifiedSynapseMessage
		if err != nil {
			err = fmt.Errorf("stored payload: %w", err)
		} else {
			m = n.message(wire.MessageType(it.Type), peerID, it.ID, it.CorrelationID, pl)
		}
		if err == nil && !found && !contracts.Exempt(m.MessageType) {
			// Nothing was posted yet: those before it need no contract.
			var failed *outbox.Failure
			if c, failed = n.contractor.seal(ctx, p, m, ""); failed != nil {
				fill(0, failed)
				return out
			}
			found = true
			if o.overA2A(c, items) {
				// A contract that sends over A2A: one message at a time.
				for i, it := range items {
					if i > 0 && out[i-1] != nil {
						out[i] = outbox.NotSent()
						continue
					}
					out[i] = o.deliverPeer(base, dest, p, it, seq(i))
				}
				return out
			}
			if c != nil {
				cid = c.ContractID
			}
		} else if err == nil {
			err = n.contracts.SealUnder(c, p.contractPeer(), m)
		}
		var body []byte
		if err == nil && !signed {
			err = n.a.Sign(m) // else the batch is signed as a whole
		}
		if err == nil {
			body, err = wire.EncodeEnvelopeJSON(m)
		}
		if err != nil {
			// Those before it go; it is given up; those after it wait.
			o.postBatch(ctx, dest, p, cid, signed, &req, out[:i])
			out[i] = &outbox.Failure{Err: err, Permanent: true}
			fill(i+1, outbox.NotSent())
			return out
		}
		s := seq(i)
		req.Messages = append(req.Messages, BatchItem{Seq: s.Seq, Prev: s.Prev, Envelope: body})
		size += len(body)
	}
	o.postBatch(ctx, dest, p, cid, signed, &req, out)
	return out
}

// overA2A tells whether c sends any of items over A2A.
func (o *deliverer) overA2A(c *negotiate.Contract, items []*outbox.Item) bool {
	for _, it := range items {
		if t := wire.MessageType(it.Type); !contracts.Exempt(t) {
			if _, ok := o.n.a2aDestination(c, t); ok {
				return true
			}
		}
	}
	return false
}

// failedAt tells whether any outcome is a failure.
func failedAt(out []*outbox.Failure) bool {
	for _, d := range out {
		if d != nil {
			return true
		}
	}
	return false
}

// postBatch sends one batch and sets out (one per message of req) from
// its answer.
// cid is the contract they were sent under ("": none); signed: the
// envelopes are unsigned and the batch is signed as a whole.
func (o *deliverer) postBatch(ctx context.Context, dest string, p *peer, cid string, signed bool, req *BatchRequest, out []*outbox.Failure) {
	if len(req.Messages) == 0 {
		return
	}
	n := o.n
	peerID := p.rec.AgentID
	body := req.AppendJSON(make([]byte, 0, req.Size()))
	h := n.p2p.signHeader(peerID, n.clock.Now(), body)
	if signed {
		sig, err := n.a.SignBatch(peerID, body)
		if err != nil {
			for i := range out {
				out[i] = &outbox.Failure{Err: fmt.Errorf("sign batch: %w", err), Permanent: true}
			}
			return
		}
		h[HeaderBatchSignature] = sig
	}
	n.m.batches.Inc()
	res := n.send(ctx, &transport.Message{Kind: transport.Envelopes, To: p.rec.Endpoint, Body: body,
		ContentType: wire.ContentJSON, Header: h, MaxReply: min(maxAnswerBytes*len(req.Messages), maxBatchAnswer)})
	o.heardAnswer(dest, res)
	var ans BatchAnswer
	if res.Delivered() && (res.Truncated || batch.DecodeAnswer(res.Reply, &ans) != nil || len(ans.Results) != len(req.Messages)) {
		res = transport.Outcome{Class: transport.Retry, Status: res.Status, Err: fmt.Errorf("%w: %w", transport.ErrNotDelivered, errBatchAnswer)}
	}
	if !res.Delivered() {
		// The batch as a whole: never a reason to give its messages up
		// (a peer that stopped taking batches gets them one by one).
		derr := outbox.FailureOf(res)
		if derr.Permanent || res.Class == transport.Retry && !res.Unreached && res.Status/100 == 4 {
			o.batchOff(dest)
			derr = &outbox.Failure{Err: derr.Err, RetryAfter: derr.RetryAfter, Code: derr.Code}
		}
		if derr.Code != "" {
			n.pairing.refusedBy(peerID, derr.Code)
		}
		for i := range out {
			out[i] = derr
		}
		return
	}
	anyOK, refused := false, false
	for i, r := range ans.Results {
		a := transport.Answer{Status: r.Status, Body: r.Body, ContentType: wire.ContentJSON, Error: r.Error,
			RetryAfter: min(max(msDuration(r.RetryAfterMS), 0), transport.MaxRetryAfter)}
		if a.Status/100 != 2 && a.Error == nil {
			a.Error = transport.DecodeError(r.Body, wire.ContentJSON)
		}
		res := transport.Classify(transport.Envelope, a)
		out[i] = outbox.FailureOf(res)
		if out[i] != nil && stateRefusal(out[i].Code) {
			n.log.Info("the peer refused a state change", "peer", peerID, "err", out[i].Err)
			out[i] = nil // answered: see deliverPeer
		}
		if out[i] == nil {
			anyOK = true
			continue
		}
		if cid != "" && contracts.RefusesContract(res) {
			// The peer does not hold the contract: recorded once, and the
			// message is sent again under a new one.
			if !refused {
				refused = true
				n.log.Info("the peer refused the contract: negotiating again", "peer", peerID, "contract_id", cid, "err", res.Err)
				if err := n.contracts.RevokedByPeer(ctx, peerID, cid); err != nil {
					n.log.Warn("record the peer's refusal of a contract", "contract_id", cid, "err", err)
				}
			}
			out[i].Permanent, out[i].RefusedContract = false, true
		}
		n.pairing.refusedBy(peerID, out[i].Code)
	}
	if anyOK {
		n.pairing.acceptedBy(peerID)
		if n.pairing.heard(peerID, nil) {
			n.spawn(func() { n.out.Wake(peerID) })
		}
	}
}
