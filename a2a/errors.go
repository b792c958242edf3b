package a2a

import (
	"errors"
	"fmt"

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
)

// RPCError is a JSON-RPC error object. Data carries this agent's TPError
// when the error came from the agent.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("a2a error %d: %s", e.Code, e.Message) }

// Errorf builds an RPCError.
func Errorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorFrom maps an error to its JSON-RPC error: an *RPCError is kept; an
// agent error maps by code (task_not_found → -32001, task_already_completed
// → -32002, capability_lacking → -32004, unsupported_media_type → -32005,
// invalid_params, message_format_invalid and TP-VAL001 → -32602, anything
// else → -32603) with the TPError as data.
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
	case wire.CodeInvalidParams, wire.CodeMessageFormatInvalid, wire.CodeValSchema, wire.CodeValUTF8, wire.CodeTargetRefused:
		code = CodeInvalidParams
	}
	msg := we.Message
	if msg == "" {
		msg = "internal error"
	}
	return &RPCError{Code: code, Message: msg, Data: we}
}
