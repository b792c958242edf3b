package transport

import (
	"context"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Transport delivers messages over one wire (HTTP, MQTT, A2A JSON-RPC).
// Implementations are safe for concurrent use. Send never returns before
// the outcome is known or ctx is done (then the outcome is Retry,
// Unreached); it never panics on what the destination answers.
type Transport interface {
	Send(ctx context.Context, m *Message) Outcome
}

// Func adapts a function to Transport (a test's fake destination, say).
type Func func(ctx context.Context, m *Message) Outcome

// Send calls f.
func (f Func) Send(ctx context.Context, m *Message) Outcome { return f(ctx, m) }

// Kind is what a Message is, which decides where it goes at the
// destination and how an answer without a TPError is classified.
type Kind uint8

// The kinds of message.
const (
	// Envelope is a signed envelope for a peer agent; To is its endpoint.
	Envelope Kind = iota + 1
	// Callback is a body for a webhook a client named (callback_url, an
	// A2A push URL); To is the URL, which the outbound policy guards.
	// The receiver need not be an agent: its answers are not read as
	// TPErrors.
	Callback
	// Batch is a tier-1 batch (msgpack) for an upstream agent; To is its
	// endpoint and Header[HeaderRoutine] the batch's routine id.
	Batch
	// Request is a body for a service (an LLM backend, a registry); To is
	// the URL; the Reply is its answer.
	Request
	// Fetch reads the document at To (an identity, capabilities, a
	// registry listing); Body is empty.
	Fetch
	// Envelopes is a batch of signed envelopes for a peer agent that
	// announced batches (package peer, p2p_batch.go); To is its endpoint.
	// Only http and https carry it.
	Envelopes
)

func (k Kind) String() string {
	switch k {
	case Envelope:
		return "envelope"
	case Callback:
		return "callback"
	case Batch:
		return "batch"
	case Envelopes:
		return "envelopes"
	case Request:
		return "request"
	case Fetch:
		return "fetch"
	}
	return "unknown"
}

// Header names a Message or an Answer may carry. A transport carries each
// as its wire allows (HTTP: as headers of these names; MQTT 5: as user
// properties). Other names are carried as they are.
const (
	HeaderMessageID   = "X-Synapse-Message-Id"
	HeaderSeq         = "X-Synapse-Seq"      // outbox sequence of the message
	HeaderSeqPrev     = "X-Synapse-Seq-Prev" // sequence of its predecessor
	HeaderOrdering    = "X-Synapse-Ordering" // in an answer: "per-sender"
	HeaderSignature   = wire.HeaderSignature // HMAC of the body (SPEC §3)
	HeaderSourceAgent = "X-Synapse-Source-Agent"
	HeaderEvent       = "X-Synapse-Event"
	// HeaderAuthorization is sent as is ("Bearer TOKEN").
	HeaderAuthorization = "Authorization"
	// HeaderRoutine is the tier-1 routine id of a Batch (HTTP: part of
	// the path, not a header).
	HeaderRoutine = "X-Synapse-Routine"
)

// DefaultMaxReply bounds the part of an answer that is read when
// Message.MaxReply is 0.
const DefaultMaxReply = 64 << 10

// Message is one thing to send.
type Message struct {
	Kind Kind
	// To is the destination URL (see the package doc).
	To          string
	Body        []byte
	ContentType string
	Header      map[string]string
	// MaxReply bounds the bytes of the answer read into Outcome.Reply
	// (0: DefaultMaxReply); a longer answer sets Outcome.Truncated.
	MaxReply int
	// TLSPin, if set, is the SHA-256 (lowercase hex) the TLS certificate
	// of an https destination must have: the fingerprint pinned at
	// pairing, which replaces verification against the CAs. Another
	// certificate fails the send as Unreachable (retriable), with an
	// error that is a tlspin.ErrMismatch.
	TLSPin string
}

// Inbound is a message a transport received (not through the agent's
// HTTP API, which serves its own requests).
type Inbound struct {
	Kind        Kind // Envelope or Callback
	Body        []byte
	ContentType string
	Header      map[string]string
	// From names where it came from, for logs (an MQTT topic, say).
	From string
}

// Answer is the receiving agent's answer to a message: what its HTTP API
// would have answered, in terms any transport can carry back.
type Answer struct {
	// Status is the HTTP status the API would have used: 200 with a
	// reply, 202 accepted, or the status of Error.
	Status      int
	Body        []byte
	ContentType string
	Header      map[string]string
	// Error is the refusal, if any (Body then holds it as a TPError
	// body).
	Error *wire.Error
	// RetryAfter asks the sender to wait before trying again.
	RetryAfter time.Duration
}

// Receiver is the peer network's side of a transport that receives:
// it checks and applies one inbound message and returns the answer to
// send back.
type Receiver interface {
	Receive(ctx context.Context, in *Inbound) Answer
}

// ReceiverFunc adapts a function to Receiver.
type ReceiverFunc func(ctx context.Context, in *Inbound) Answer

// Receive calls f.
func (f ReceiverFunc) Receive(ctx context.Context, in *Inbound) Answer { return f(ctx, in) }
