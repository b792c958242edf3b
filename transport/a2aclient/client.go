package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// maxAnswer bounds the bytes of an A2A answer read.
const maxAnswer = 4 << 20

// Schemes are the destination URL schemes this transport serves.
var Schemes = []string{"a2a+http", "a2a+https"}

// endpoint turns a destination (a2a+http://host/a2a) into the HTTP URL of
// the A2A endpoint.
func endpoint(to string) (string, error) {
	for _, s := range Schemes {
		if rest, ok := strings.CutPrefix(to, s+"://"); ok && rest != "" {
			return strings.TrimPrefix(s, "a2a+") + "://" + rest, nil
		}
	}
	return "", errors.New("an A2A destination is an a2a+http or a2a+https URL")
}

// rpcAnswer is a JSON-RPC response as read.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// agentError is the TPError of the error's typed details (a
// google.protobuf.Struct with a code, as Synapse sends it), or nil.
func (e *rpcError) agentError() *wire.Error {
	var details []map[string]json.RawMessage
	if json.Unmarshal(e.Data, &details) != nil {
		return nil
	}
	for _, d := range details {
		var typ string
		if json.Unmarshal(d["@type"], &typ) != nil || typ != a2a.TypeStruct {
			continue
		}
		var we wire.Error
		delete(d, "@type")
		b, _ := json.Marshal(d)
		if json.Unmarshal(b, &we) == nil && we.Code != "" {
			return &we
		}
	}
	return nil
}

// reason is the ErrorInfo reason of the error's details, if any.
func (e *rpcError) reason() string {
	var details []struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
	}
	if json.Unmarshal(e.Data, &details) != nil {
		return ""
	}
	for _, d := range details {
		if d.Type == a2a.TypeErrorInfo {
			return d.Reason
		}
	}
	return ""
}

// outcome classifies a JSON-RPC error answered with HTTP 200.
func (e *rpcError) outcome() transport.Outcome {
	we := e.agentError()
	status := http.StatusInternalServerError
	switch e.Code {
	case a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound, a2a.CodeInvalidParams,
		a2a.CodeUnsupportedOperation, a2a.CodeContentTypeNotSupported, a2a.CodePushNotSupported,
		a2a.CodeTaskNotCancelable:
		status = http.StatusBadRequest
	case a2a.CodeTaskNotFound:
		status = http.StatusNotFound
	case a2a.CodeUnauthenticated:
		status = http.StatusUnauthorized
	case a2a.CodeUnauthorized:
		status = http.StatusForbidden
	}
	var retryAfter time.Duration
	if e.reason() == "RATE_LIMITED" || (we != nil && we.Code == wire.CodeRateLimited) {
		status, retryAfter = http.StatusTooManyRequests, time.Second
	}
	if status == http.StatusBadRequest || status == http.StatusNotFound {
		if we == nil {
			we = &wire.Error{Code: wire.CodeInvalidParams}
		}
		we = &wire.Error{Code: we.Code, Message: we.Message, Details: we.Details}
		we.Retriable = false
	}
	if we != nil && we.Message == "" {
		we.Message = e.Message
	}
	o := transport.Classify(transport.Envelope, transport.Answer{Status: status, Error: we, RetryAfter: retryAfter})
	o.Err = fmt.Errorf("%w: A2A error %d: %s", transport.ErrNotDelivered, e.Code, e.Message)
	return o
}

// client calls one A2A JSON-RPC endpoint.
type client struct {
	hc    *http.Client
	ids   atomic.Uint64
	agent string // User-Agent
}

// call posts method(params) to url and decodes its result into out. A
// failure is returned as the Outcome of the call (Delivered when it
// succeeded).
func (c *client) call(ctx context.Context, url, token, method string, params, out any) transport.Outcome {
	o, _ := c.rpc(ctx, url, token, "", method, params, out)
	return o
}

// rpc is call that also returns the JSON-RPC error of a 200 answer; idem,
// when not empty, is sent as the Idempotency-Key.
func (c *client) rpc(ctx context.Context, url, token, idem, method string, params, out any) (transport.Outcome, *rpcError) {
	p, err := json.Marshal(params)
	if err != nil {
		return transport.Refused(fmt.Errorf("encode %s params: %w", method, err)), nil
	}
	body, err := json.Marshal(&a2a.Request{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatUint(c.ids.Add(1), 10)),
		Method: method, Params: p})
	if err != nil {
		return transport.Refused(fmt.Errorf("encode %s: %w", method, err)), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return transport.Refused(err), nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	if c.agent != "" {
		req.Header.Set("User-Agent", c.agent)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return transport.Unreachable(err), nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return transport.Unreachable(err), nil
	}
	if len(raw) > maxAnswer {
		return transport.Refused(fmt.Errorf("the %s answer is over %d bytes", method, maxAnswer)), nil
	}
	var ans rpcAnswer
	decoded := json.Unmarshal(raw, &ans) == nil
	if resp.StatusCode/100 != 2 {
		a := transport.Answer{Status: resp.StatusCode, Body: raw, ContentType: resp.Header.Get("Content-Type"),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		if decoded && ans.Error != nil {
			a.Error = ans.Error.agentError()
		}
		return transport.Classify(transport.Envelope, a), nil
	}
	if !decoded {
		return transport.Outcome{Class: transport.Retry, Status: resp.StatusCode,
			Err: fmt.Errorf("%w: the %s answer is no JSON-RPC response", transport.ErrNotDelivered, method)}, nil
	}
	if ans.Error != nil {
		o := ans.Error.outcome()
		o.Status = resp.StatusCode
		return o, ans.Error
	}
	if out != nil {
		if err := json.Unmarshal(ans.Result, out); err != nil {
			return transport.Outcome{Class: transport.Retry, Status: resp.StatusCode,
				Err: fmt.Errorf("%w: decode the %s result: %v", transport.ErrNotDelivered, method, err)}, nil
		}
	}
	return transport.Outcome{Class: transport.Delivered, Status: resp.StatusCode}, nil
}

// retryAfter reads a Retry-After header in seconds (0 when absent or a
// date, which leaves the wait to the sender).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// sendResult is SendMessage's v1.0 result: a task or a message.
type sendResult struct {
	Task    *a2a.Task    `json:"task"`
	Message *a2a.Message `json:"message"`
}
