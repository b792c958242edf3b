package a2a

import (
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// JSON-RPC 2.0 and A2A error codes.
const (
	CodeParseError              = -32700
	CodeInvalidRequest          = -32600
	CodeMethodNotFound          = -32601
	CodeInvalidParams           = -32602
	CodeInternal                = -32603
	CodeTaskNotFound            = -32001
	CodeTaskNotCancelable       = -32002
	CodePushNotSupported        = -32003
	CodeUnsupportedOperation    = -32004
	CodeContentTypeNotSupported = -32005
	CodeUnauthenticated         = -31401
	CodeUnauthorized            = -31403
)

// Domain is the ErrorInfo domain of A2A errors.
const Domain = "a2a-protocol.org"

// The type URLs of v1.0 error details.
const (
	TypeErrorInfo = "type.googleapis.com/google.rpc.ErrorInfo"
	TypeStruct    = "type.googleapis.com/google.protobuf.Struct"
)

// reasons are the ErrorInfo reasons of the codes, as the reference SDKs
// name them.
var reasons = map[int]string{
	CodeParseError: "PARSE_ERROR", CodeInvalidRequest: "INVALID_REQUEST", CodeMethodNotFound: "METHOD_NOT_FOUND",
	CodeInvalidParams: "INVALID_PARAMS", CodeInternal: "INTERNAL_ERROR", CodeTaskNotFound: "TASK_NOT_FOUND",
	CodeTaskNotCancelable: "TASK_NOT_CANCELABLE", CodePushNotSupported: "PUSH_NOTIFICATION_NOT_SUPPORTED",
	CodeUnsupportedOperation: "UNSUPPORTED_OPERATION", CodeContentTypeNotSupported: "CONTENT_TYPE_NOT_SUPPORTED",
	CodeUnauthenticated: "UNAUTHENTICATED", CodeUnauthorized: "UNAUTHORIZED",
}

// RPCError is a JSON-RPC error object. Agent is this agent's TPError when
// the error came from the agent; WithDetails renders it into Data.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
	// Agent is the agent's error behind this one, if any.
	Agent *wire.Error `json:"-"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("a2a error %d: %s", e.Code, e.Message) }

// Errorf builds an RPCError.
func Errorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails renders e's data as a list of typed details, as the
// reference SDKs send and read it for both versions (v0.3's data is
// free-form, and a2a-go's v0.3 transport reads the list too): the agent's
// TPError, if any, as a google.protobuf.Struct, then a google.rpc.ErrorInfo
// with the A2A reason, the domain and metadata (the TPError's code as
// synapse_code, and retry_after_s for a rate limit).
func (e *RPCError) WithDetails(now time.Time) *RPCError {
	out := *e
	reason, ok := reasons[e.Code]
	if !ok {
		reason = "INTERNAL_ERROR"
	}
	meta := map[string]string{"timestamp": now.UTC().Format(time.RFC3339)}
	var details []map[string]any
	if e.Agent != nil {
		meta["synapse_code"] = string(e.Agent.Code)
		if e.Agent.Code == wire.CodeRateLimited {
			reason = "RATE_LIMITED"
			meta["retry_after_s"] = "1"
		}
		s := map[string]any{"@type": TypeStruct, "code": string(e.Agent.Code), "message": e.Agent.Message,
			"retriable": e.Agent.Retriable}
		if len(e.Agent.Details) > 0 {
			s["details"] = e.Agent.Details
		}
		details = append(details, s)
	}
	details = append(details, map[string]any{"@type": TypeErrorInfo, "reason": reason, "domain": Domain, "metadata": meta})
	out.Data = details
	return &out
}

// ErrorFrom maps an error to its JSON-RPC error: an *RPCError is kept; an
// agent error maps by code (task_not_found → -32001, task_already_completed
// → -32002, capability_lacking → -32004, unsupported_media_type → -32005,
// invalid_params, message_format_invalid, TP-VAL001 and
// idempotency_key_reused → -32602, anything
// else → -32603) and keeps the TPError as Agent.
func ErrorFrom(err error) *RPCError {
	var re *RPCError
	if errors.As(err, &re) {
		return re
	}
	we := wire.AsError(err)
	code := CodeInternal
	switch we.Code {
	case wire.CodeTaskNotFound:
		code = CodeTaskNotFound
	case wire.CodeTaskAlreadyCompleted:
		code = CodeTaskNotCancelable
	case wire.CodeCapabilityLacking:
		code = CodeUnsupportedOperation
	case wire.CodeUnsupportedMedia:
		code = CodeContentTypeNotSupported
	case wire.CodeInvalidParams, wire.CodeMessageFormatInvalid, wire.CodeValSchema, wire.CodeValUTF8, wire.CodeTargetRefused,
		wire.CodeIdempotencyMismatch:
		code = CodeInvalidParams
	case wire.CodeUnauthorized:
		code = CodeUnauthenticated
	case wire.CodePermissionDenied:
		code = CodeUnauthorized
	}
	msg := we.Message
	if msg == "" {
		msg = "internal error"
	}
	return &RPCError{Code: code, Message: msg, Agent: we}
}
