package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// P2P over the broker. A peer's endpoint is mqtt://[broker]/{agent_id}:
// it names the peer, on this agent's broker, under this agent's topic
// prefix. An envelope for it is published, in a request frame (frame.go),
// to its inbox {prefix}/agents/{agent_id}/inbox; the peer applies it (its
// peer network's Receiver: checks, per-sender order, effects on disk) and
// publishes its answer, in an answer frame with the request's id, to this
// agent's inbox. Send returns the outcome of that answer, classified as
// for HTTP (transport.Classify). The broker's PUBACK is not delivery: a
// request without an answer before ctx ends is Retry, unreached, and the
// outbox keeps the envelope and sends it again later with the same
// message id (the peer answers a message it has applied as a duplicate,
// without applying it again). So nothing is lost when the broker restarts
// without persistence, and nothing is applied twice.

// Answers wait at most this long for the receiver (its Receive).
const receiveTimeout = 30 * time.Second

// maxConcurrentRequests bounds the inbox requests handled at once; the
// inbox waits beyond it.
const maxConcurrentRequests = 64

// headerRetryAfter carries an answer's RetryAfter, in whole seconds.
const headerRetryAfter = "Retry-After"

// headerFetch, in a request frame, makes it a Fetch of the document at
// that path (the agent's public identity and capabilities), answered by
// the transport itself.
const headerFetch = "X-Synapse-Fetch"

// Documents returns the public document at an API path (the identity,
// the capabilities), as GET on the HTTP API would; ok is false for any
// other path.
type Documents func(ctx context.Context, path string) (body []byte, contentType string, ok bool)

// SetDocuments makes the transport answer Fetch requests from peers
// (pairing reads the identity document) with d. Call it before Start.
func (t *Transport) SetDocuments(d Documents) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.docs = d
}

// SetReceiver makes the transport take envelopes published to this
// agent's inbox and hand them to r (the peer network's Receiver). Call it
// before Start; without it envelopes are answered 503 agent_not_ready.
func (t *Transport) SetReceiver(r transport.Receiver) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.receiver = r
}

// PeerAgent is the agent_id a peer endpoint (mqtt://[broker]/{agent_id})
// names.
func PeerAgent(endpoint string) (string, error) {
	id, rest, err := peerPath(endpoint)
	if err == nil && rest != "" {
		err = fmt.Errorf("mqtt: endpoint %q has a path after the agent_id", endpoint)
	}
	return id, err
}

// peerPath splits mqtt://[broker]/{agent_id}[/path] into the agent_id and
// the path (a Fetch's document).
func peerPath(to string) (id, path string, err error) {
	u, err := url.Parse(to)
	if err != nil || (u.Scheme != "mqtt" && u.Scheme != "mqtts") {
		return "", "", fmt.Errorf("mqtt: %q is not an mqtt:// endpoint", to)
	}
	id, path, _ = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !validLevel(id) || u.RawQuery != "" {
		return "", "", fmt.Errorf("mqtt: endpoint %q names no agent (want mqtt://[broker]/AGENT_ID)", to)
	}
	if path != "" {
		path = "/" + path
	}
	return id, path, nil
}

// request sends m in a request frame to the inbox of the agent its
// destination names and waits for the answer.
func (t *Transport) request(ctx context.Context, c *Client, m *transport.Message) transport.Outcome {
	peerID, path, err := peerPath(m.To)
	if err != nil {
		return transport.Refused(err)
	}
	header := m.Header
	switch {
	case m.Kind == transport.Fetch:
		if path == "" || len(path) > maxHeaderValue {
			return transport.Refused(fmt.Errorf("mqtt: fetch of %q names no document", m.To))
		}
		header = map[string]string{headerFetch: path}
	case path != "":
		return transport.Refused(fmt.Errorf("mqtt: endpoint %q has a path after the agent_id", m.To))
	}
	topic, err := t.topics().Inbox(peerID)
	if err != nil {
		return transport.Refused(err)
	}
	id := newFrameID()
	raw, err := appendFrame(nil, &frame{typ: frameRequest, id: id, from: t.agent, ctype: m.ContentType, header: header, body: m.Body})
	if err != nil {
		return transport.Refused(err)
	}
	ch := make(chan *frame, 1)
	t.pmu.Lock()
	t.pending[id] = ch
	t.pmu.Unlock()
	defer func() {
		t.pmu.Lock()
		delete(t.pending, id)
		t.pmu.Unlock()
	}()
	if err := c.WaitUp(ctx); err != nil {
		return transport.Unreachable(err)
	}
	// A link that drops before the answer may have lost the request or
	// the answer (a broker restarted without persistence loses both):
	// the outbox sends again at once rather than after ctx's timeout.
	down := c.Down()
	if err := c.Publish(ctx, topic, raw, false); err != nil {
		return transport.Unreachable(err)
	}
	answerTimer := time.NewTimer(t.opts.AnswerTimeout)
	defer answerTimer.Stop()
	select {
	case <-down:
		return transport.Unreachable(fmt.Errorf("the link to the broker dropped before %s answered", peerID))
	case f := <-ch:
		a := transport.Answer{Status: f.status, Body: f.body, ContentType: f.ctype, Header: f.header,
			Error: transport.DecodeError(f.body, f.ctype)}
		if s, err := strconv.Atoi(f.header[headerRetryAfter]); err == nil && s > 0 {
			a.RetryAfter = time.Duration(s) * time.Second
		}
		o := transport.Classify(m.Kind, a)
		if max := cmp(m.MaxReply, transport.DefaultMaxReply); len(o.Reply) > max {
			o.Reply, o.Truncated = o.Reply[:max], true
		}
		return o
	case <-answerTimer.C:
		return transport.Unreachable(fmt.Errorf("no answer from %s within %s (the broker took the message; it is not delivered until %s answers)", peerID, t.opts.AnswerTimeout, peerID))
	case <-ctx.Done():
		return transport.Unreachable(fmt.Errorf("no answer from %s (the broker took the message; it is not delivered until %s answers)", peerID, peerID))
	case <-t.stop:
		return transport.Unreachable(ErrClosed)
	}
}

func cmp(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func newFrameID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// onInbox takes one message of this agent's inbox: an answer goes to the
// Send waiting for it (a late one, whose Send gave up, is dropped: the
// envelope goes again and is answered again); a request is handed to the
// receiver on its own goroutine, so that the per-sender order of the peer
// network may wait for a predecessor without holding up the inbox.
func (t *Transport) onInbox(topic string, payload []byte) {
	f, err := parseFrame(payload)
	if err != nil {
		t.Malformed.Add(1)
		t.log.Warn("mqtt: dropped a malformed message from the inbox", "topic", topic, "err", err)
		return
	}
	if f.typ == frameAnswer {
		t.pmu.Lock()
		ch := t.pending[f.id]
		t.pmu.Unlock()
		if ch != nil {
			select {
			case ch <- f:
			default:
			}
		}
		return
	}
	select {
	case t.sem <- struct{}{}:
	case <-t.stop:
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		<-t.sem
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer func() { <-t.sem; t.wg.Done() }()
		t.answer(topic, f)
	}()
}

// answer hands a request to the receiver and publishes its answer to the
// requester's inbox.
func (t *Transport) answer(topic string, f *frame) {
	ctx, cancel := context.WithTimeout(t.bg, receiveTimeout)
	defer cancel()
	t.mu.Lock()
	r, docs := t.receiver, t.docs
	t.mu.Unlock()
	var a transport.Answer
	if path, ok := f.header[headerFetch]; ok {
		a = fetchAnswer(ctx, docs, path)
	} else if r == nil {
		e := wire.Errorf(wire.CodeAgentNotReady, "this agent takes no envelopes over MQTT")
		a = transport.Answer{Status: e.Status(), Error: e, ContentType: wire.ContentJSON}
		a.Body, _ = wire.JSON.Marshal(wire.ErrorBody{Error: e})
	} else {
		a = r.Receive(ctx, &transport.Inbound{Kind: transport.Envelope, Body: f.body, ContentType: f.ctype, Header: f.header, From: topic})
	}
	header := a.Header
	if a.RetryAfter > 0 {
		header = make(map[string]string, len(a.Header)+1)
		for k, v := range a.Header {
			header[k] = v
		}
		header[headerRetryAfter] = strconv.Itoa(int(max(a.RetryAfter/time.Second, 1)))
	}
	status := a.Status
	if status < 100 || status > 599 {
		status = 500
	}
	out, err := appendFrame(nil, &frame{typ: frameAnswer, id: f.id, from: t.agent, status: status, ctype: a.ContentType, header: header, body: a.Body})
	if err != nil {
		// Headers or body the frame cannot carry: the status alone.
		out, err = appendFrame(nil, &frame{typ: frameAnswer, id: f.id, from: t.agent, status: status})
	}
	if err != nil {
		t.log.Error("mqtt: cannot encode an answer", "err", err)
		return
	}
	to, err := t.topics().Inbox(f.from)
	if err != nil {
		return
	}
	if err := t.c.Publish(ctx, to, out, false); err != nil && !errors.Is(err, ErrClosed) {
		t.log.Warn("mqtt: an answer did not reach the broker; the requester will send again", "to", f.from, "err", err)
	}
}

// fetchAnswer answers a Fetch from the public documents.
func fetchAnswer(ctx context.Context, docs Documents, path string) transport.Answer {
	if docs != nil {
		if b, ct, ok := docs(ctx, path); ok {
			return transport.Answer{Status: 200, Body: b, ContentType: ct}
		}
	}
	e := wire.Errorf(wire.CodeNotFound, "no document %s here", path)
	a := transport.Answer{Status: e.Status(), Error: e, ContentType: wire.ContentJSON}
	a.Body, _ = wire.JSON.Marshal(wire.ErrorBody{Error: e})
	return a
}
