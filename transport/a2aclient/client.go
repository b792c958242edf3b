package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// client calls A2A JSON-RPC endpoints through a wire (HTTP).
type client struct {
	wire transport.Transport
	ids  atomic.Uint64
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
	h := map[string]string{"Accept": "application/json", "A2A-Version": "1.0"}
	if token != "" {
		h[transport.HeaderAuthorization] = token
	}
	if idem != "" {
		h["Idempotency-Key"] = idem
	}
	o := c.wire.Send(ctx, &transport.Message{Kind: transport.Request, To: url, Body: body,
		ContentType: "application/json", Header: h, MaxReply: maxAnswer})
	var ans rpcAnswer
	decoded := !o.Truncated && json.Unmarshal(o.Reply, &ans) == nil
	if !o.Delivered() {
		if o.Status == 0 {
			return o, nil // not reached
		}
		// Classified again as an envelope's answer, with the TPError
		// Synapse puts in the JSON-RPC error's data.
		a := transport.Answer{Status: o.Status, Body: o.Reply, ContentType: o.ReplyType, RetryAfter: o.RetryAfter}
		if decoded && ans.Error != nil {
			a.Error = ans.Error.agentError()
		}
		return transport.Classify(transport.Envelope, a), nil
	}
	if o.Truncated {
		return transport.Refused(fmt.Errorf("the %s answer is over %d bytes", method, maxAnswer)), nil
	}
	if !decoded {
		return transport.Outcome{Class: transport.Retry, Status: o.Status,
			Err: fmt.Errorf("%w: the %s answer is no JSON-RPC response", transport.ErrNotDelivered, method)}, nil
	}
	if ans.Error != nil {
		eo := ans.Error.outcome()
		eo.Status = o.Status
		return eo, ans.Error
	}
	if out != nil {
		if err := json.Unmarshal(ans.Result, out); err != nil {
			return transport.Outcome{Class: transport.Retry, Status: o.Status,
				Err: fmt.Errorf("%w: decode the %s result: %v", transport.ErrNotDelivered, method, err)}, nil
		}
	}
	return transport.Outcome{Class: transport.Delivered, Status: o.Status}, nil
}

// sendResult is SendMessage's v1.0 result: a task or a message.
type sendResult struct {
	Task    *a2a.Task    `json:"task"`
	Message *a2a.Message `json:"message"`
}
