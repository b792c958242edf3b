package transport

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Class is what the sender should do after a Send.
type Class uint8

// The outcome classes (see the package doc). The zero Class is none of
// them: an Outcome left empty is not mistaken for a delivery.
const (
	Delivered Class = iota + 1
	Retry
	Negotiable
	Permanent
)

func (c Class) String() string {
	switch c {
	case Delivered:
		return "delivered"
	case Retry:
		return "retry"
	case Negotiable:
		return "negotiable"
	case Permanent:
		return "permanent"
	}
	return "unknown"
}

// ErrNotDelivered is wrapped by every Outcome.Err.
var ErrNotDelivered = errors.New("not delivered")

// Outcome is the classified result of one Send.
type Outcome struct {
	Class Class
	// RetryAfter is the least wait the destination asked for (at most
	// MaxRetryAfter); 0 leaves the wait to the sender.
	RetryAfter time.Duration
	// Unreached (with Retry): the message did not reach the destination,
	// or it has not accepted this agent yet.
	Unreached bool
	// Status is the destination's HTTP status, or the status its answer
	// stands for on another wire; 0 when there was no answer.
	Status int
	// Error is the destination's TPError, when its answer held one (not
	// for a Callback).
	Error *wire.Error
	// Reply is the start of the answer body (at most Message.MaxReply
	// bytes; Truncated when there was more), ReplyType its content type
	// and ReplyHeader the headers of the answer named in this package.
	Reply       []byte
	ReplyType   string
	ReplyHeader map[string]string
	Truncated   bool
	// Err says why the message was not delivered (nil when it was); it
	// wraps ErrNotDelivered.
	Err error
}

// Delivered reports whether the destination took the message.
func (o Outcome) Delivered() bool { return o.Class == Delivered }

// MaxRetryAfter bounds RetryAfter: a destination cannot park a message
// for longer.
const MaxRetryAfter = time.Hour

// Unreachable is the outcome of a message that got no answer (Err wraps
// both ErrNotDelivered and err): err is the transport's error (a refused connection, a timeout, a closed broker
// session). A *url.Error is unwrapped so that the URL, which may carry a
// secret, stays out of logs.
func Unreachable(err error) Outcome {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return Outcome{Class: Retry, Unreached: true, Err: fmt.Errorf("%w: %w", ErrNotDelivered, err)}
}

// Refused is the outcome of a message that cannot be sent at all (a bad
// destination URL, an unknown scheme, a body the wire cannot carry).
func Refused(err error) Outcome {
	return Outcome{Class: Permanent, Err: fmt.Errorf("%w: %w", ErrNotDelivered, err)}
}

// Classify turns a destination's answer to a message of kind k into an
// Outcome. It is the one place where statuses and TPErrors become
// classes; every transport calls it.
//
//   - 2xx: Delivered (a TP-ID004 duplicate is answered 200: it was
//     delivered before).
//   - A 4xx with a TPError of class Negotiable (wire's registry; not
//     read from a Callback's answer, whose receiver need not be an
//     agent): Negotiable. (A 5xx is the destination's failure, whatever
//     its body says.)
//   - 410 Gone: Permanent.
//   - 401, 502, 503, 504: Retry, Unreached (401: the peer may not have
//     paired this agent yet).
//   - 408, 429: Retry.
//   - Another 4xx: for a Callback, Retry (a webhook's refusal may be
//     temporary); for a Batch, Permanent when 400 or 413 (the upstream
//     cannot take this batch), else Retry (a token without the scope is
//     fixed by an operator, and nothing is dropped meanwhile); otherwise
//     Permanent when the answer is a TPError that says it is not
//     retriable, else Retry.
//   - Anything else (5xx, 3xx, no status): Retry.
func Classify(k Kind, a Answer) Outcome {
	o := Outcome{Status: a.Status, Error: a.Error, RetryAfter: min(max(a.RetryAfter, 0), MaxRetryAfter),
		Reply: a.Body, ReplyType: a.ContentType, ReplyHeader: a.Header}
	if a.Status/100 == 2 {
		o.Class, o.Error, o.RetryAfter = Delivered, nil, 0
		return o
	}
	o.Err = answerError(a)
	tp := a.Error
	if k == Callback {
		tp = nil
	}
	o.Error = tp
	o.Class = Retry
	switch {
	case tp != nil && tp.Class() == wire.Negotiable && a.Status/100 == 4:
		o.Class = Negotiable
	case a.Status == 410:
		o.Class = Permanent
	case a.Status == 401, a.Status == 502, a.Status == 503, a.Status == 504, a.Status == 0:
		o.Unreached = true
	case a.Status == 408, a.Status == 429:
	case a.Status/100 == 4:
		switch k {
		case Callback:
		case Batch:
			if a.Status == 400 || a.Status == 413 {
				o.Class = Permanent
			}
		default:
			if tp != nil && !tp.Retriable {
				o.Class = Permanent
			}
		}
	}
	return o
}

// answerError describes a refusal for logs and last_error: its TPError
// code and message, else the start of its body.
func answerError(a Answer) error {
	if e := a.Error; e != nil && e.Code != "" {
		return fmt.Errorf("%w: HTTP %d %s: %s", ErrNotDelivered, a.Status, e.Code, e.Message)
	}
	snippet := bytes.TrimSpace(a.Body)
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	return fmt.Errorf("%w: HTTP %d %s", ErrNotDelivered, a.Status, bytes.ToValidUTF8(snippet, []byte("?")))
}

// DecodeError reads a TPError body ({"error":{...}}) in JSON or msgpack
// (by contentType; JSON when it names neither). It returns nil for
// anything else: an HTML error page, a truncated or foreign JSON body, an
// error without a code.
func DecodeError(body []byte, contentType string) *wire.Error {
	if len(body) == 0 {
		return nil
	}
	var eb wire.ErrorBody
	if wire.CodecFor(contentType).Unmarshal(body, &eb) != nil || eb.Error == nil || eb.Error.Code == "" {
		return nil
	}
	return eb.Error
}
