package negotiate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Attempts is the client rule of seed 002 §8.4.5: each attempt is bounded
// by Timeout (at most 30 s), a failed attempt may be retried up to Retries
// times (at most 3), and then the negotiation fails with TP-NEG020.
type Attempts struct {
	Timeout time.Duration
	Retries int
}

// The seed's bounds, which are also the defaults.
const (
	MaxTimeout = 30 * time.Second
	MaxRetries = 3
)

// DefaultAttempts is 30 s and 3 retries.
var DefaultAttempts = Attempts{Timeout: MaxTimeout, Retries: MaxRetries}

// ErrRetriable marks an attempt's failure that another attempt may cure: a
// timeout, a connection error, an answer of an overloaded agent. Wrap it.
var ErrRetriable = errors.New("negotiation attempt failed")

// Exchange runs try until it succeeds, fails with an error that does not
// wrap ErrRetriable (returned as is), or has failed 1+Retries times (then
// TP-NEG020 with the last failure in its message). Each call gets a
// context bounded by Timeout; a deadline hit inside try counts as
// retriable. attempt counts from 1. Cancelling ctx ends Exchange with
// ctx's error.
func Exchange[T any](ctx context.Context, a Attempts, try func(ctx context.Context, attempt int) (T, error)) (T, error) {
	var zero T
	if a.Timeout <= 0 || a.Timeout > MaxTimeout {
		a.Timeout = MaxTimeout
	}
	a.Retries = min(max(a.Retries, 0), MaxRetries)
	var last error
	for n := 1; n <= 1+a.Retries; n++ {
		actx, cancel := context.WithTimeout(ctx, a.Timeout)
		v, err := try(actx, n)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return zero, fmt.Errorf("negotiate: %w", ctx.Err())
		}
		if !errors.Is(err, ErrRetriable) && !timedOut {
			return zero, err
		}
		last = err
	}
	return zero, wire.Errorf(wire.CodeNegTimeout, "no answer after %d attempts of at most %v: %v", 1+a.Retries, a.Timeout, last).
		With("attempts", 1+a.Retries)
}
