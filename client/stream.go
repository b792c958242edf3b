package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// maxStreamConnections bounds the connections one StreamTask call opens,
// even when every connection delivers new events.
const maxStreamConnections = 1000

// StreamTask follows the event stream of a task (GET /task/{id}/stream)
// and calls fn for each event, starting after lastEventID when it is not
// empty. It returns nil after the complete event (once fn has seen it) or
// when fn returns ErrStopStream; any other error from fn is returned as is.
//
// When the connection drops before the complete event, StreamTask
// reconnects with Last-Event-ID set to the last id it saw, so no event is
// lost or repeated. It gives up with ErrStreamIncomplete after the number
// of attempts in a row without a new event set by WithStreamRetries. An
// error answer of the agent other than 429 or 5xx ends the stream at once.
func (c *Client) StreamTask(ctx context.Context, id, lastEventID string, fn func(Event) error) error {
	eid, err := escapeID(id)
	if err != nil {
		return fmt.Errorf("stream task: %w", err)
	}
	dial := func(ctx context.Context, last string) (io.ReadCloser, error) {
		req, err := c.newRequest(ctx, http.MethodGet, "/task/"+eid+"/stream", nil, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Cache-Control", "no-cache")
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := c.send(req)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}
	if err := c.streamLoop(ctx, lastEventID, dial, fn); err != nil {
		return fmt.Errorf("stream task %s: %w", id, err)
	}
	return nil
}

// dialFunc opens one connection of an event stream, resuming after last.
type dialFunc func(ctx context.Context, last string) (io.ReadCloser, error)

// callbackError marks an error returned by the caller's function.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// streamLoop reads events from successive connections until the complete
// event, a callback error, a permanent error or the retry budget ends it.
func (c *Client) streamLoop(ctx context.Context, last string, dial dialFunc, fn func(Event) error) error {
	failures := 0
	delay := c.retryDelay
	var lastErr error
	for conn := 0; conn < maxStreamConnections; conn++ {
		body, err := dial(ctx, last)
		progressed := false
		if err == nil {
			var done bool
			var rd *EventReader
			done, progressed, rd, err = readStream(body, fn)
			body.Close()
			if id := rd.LastEventID(); id != "" {
				last = id
			}
			if r := rd.Retry(); r > 0 {
				delay = min(max(r, 10*time.Millisecond), maxRetryDelay)
			}
			var cbErr callbackError
			switch {
			case done:
				return nil
			case errors.As(err, &cbErr):
				if errors.Is(cbErr.err, ErrStopStream) {
					return nil
				}
				return cbErr.err
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !retriable(err) {
			return err
		}
		if err != nil {
			lastErr = err
		}
		if progressed {
			failures = 0
		}
		failures++
		if failures > c.streamRetries {
			if lastErr != nil {
				return fmt.Errorf("%w after %d attempts: %w", ErrStreamIncomplete, failures, lastErr)
			}
			return fmt.Errorf("%w after %d attempts", ErrStreamIncomplete, failures)
		}
		wait := min(delay<<(failures-1), maxRetryDelay)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return fmt.Errorf("%w: %d connections", ErrStreamIncomplete, maxStreamConnections)
}

// readStream passes the events of one connection to fn. done reports the
// complete event; progressed that at least one event arrived.
func readStream(body io.Reader, fn func(Event) error) (done, progressed bool, rd *EventReader, err error) {
	rd = NewEventReader(body)
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return false, progressed, rd, nil
		}
		if err != nil {
			return false, progressed, rd, err
		}
		progressed = true
		if err := fn(ev); err != nil {
			return false, progressed, rd, callbackError{err}
		}
		if ev.Type == "complete" {
			return true, progressed, rd, nil
		}
	}
}

// retriable reports whether a failed stream connection is worth another
// attempt: network errors, 429 and 5xx answers.
func retriable(err error) bool {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.Retriable || apiErr.Status == http.StatusTooManyRequests || apiErr.Status >= 500
	}
	if errors.Is(err, ErrEventTooLarge) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed)
}
