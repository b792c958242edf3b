package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/synapse-edge/synapse/internal/eventstream"
)

// Sentinel errors of the client.
var (
	// ErrEmptyID is returned when a task or token id argument is empty.
	ErrEmptyID = errors.New("client: empty id")
	// ErrStopStream may be returned by a StreamTask callback to end the
	// stream early; StreamTask then returns nil.
	ErrStopStream = errors.New("client: stop stream")
	// ErrStreamIncomplete is returned when a task stream keeps ending before
	// its complete event and the reconnect budget is spent.
	ErrStreamIncomplete = errors.New("client: stream ended before the complete event")
	// ErrEventTooLarge is returned when a server-sent line or event exceeds
	// the reader's limit.
	ErrEventTooLarge = eventstream.ErrTooLarge
	// ErrResponseTooLarge is returned when a JSON answer exceeds MaxResponseSize.
	ErrResponseTooLarge = errors.New("client: response too large")
)

// APIError is an error answer of the agent: any non-2xx status, with the
// fields of the body {"error":{"code","message","details","retriable",
// "correlation_id"}}.
type APIError struct {
	Status        int
	Code          string
	Message       string
	Details       map[string]any
	Retriable     bool
	CorrelationID string
}

// Error formats the error as "code (status): message", for example
// "rate_limited (429): too many concurrent tasks".
func (e *APIError) Error() string {
	code := e.Code
	if code == "" {
		code = "unexpected_response"
	}
	return fmt.Sprintf("%s (%d): %s", code, e.Status, e.Message)
}

// Is reports whether target is an *APIError with the same code, so that
// errors.Is(err, &client.APIError{Code: "task_not_found"}) works.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	if !ok || t.Code == "" {
		return false
	}
	return t.Code == e.Code && (t.Status == 0 || t.Status == e.Status)
}

// errorBody is the JSON shape of an error answer.
type errorBody struct {
	Error *struct {
		Code          string         `json:"code"`
		Message       string         `json:"message"`
		Details       map[string]any `json:"details"`
		Retriable     bool           `json:"retriable"`
		CorrelationID string         `json:"correlation_id"`
	} `json:"error"`
}

// maxErrorText bounds how much of a non-JSON error body goes into Message.
const maxErrorText = 200

// DecodeError turns a non-2xx answer into an *APIError. A body in the
// agent's error shape gives code, message and details; any other body
// (a proxy's HTML page, plain text, nothing) gives a message from the body
// text or the status text and an empty Code.
func DecodeError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		e.Code = eb.Error.Code
		e.Message = eb.Error.Message
		e.Details = eb.Error.Details
		e.Retriable = eb.Error.Retriable
		e.CorrelationID = eb.Error.CorrelationID
		return e
	}
	text := strings.Join(strings.Fields(string(bytes.ToValidUTF8(body, nil))), " ")
	if len(text) > maxErrorText {
		cut := maxErrorText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	if text == "" {
		text = http.StatusText(status)
	}
	if text == "" {
		text = "no error body"
	}
	e.Message = text
	// 429 and 5xx other than 501 are worth retrying even without a body.
	e.Retriable = status == http.StatusTooManyRequests || (status >= 500 && status != http.StatusNotImplemented)
	return e
}
