package wire

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// Class tells a client what to do about an error (TP §10.4).
type Class string

// The three error classes.
const (
	Retriable  Class = "retriable"  // try the same request again later
	Negotiable Class = "negotiable" // change the request (renegotiate, downgrade)
	Terminal   Class = "terminal"   // do not retry
)

// ErrorCode is a stable error code of the registry: a snake_case name
// ("task_not_found") or a seed code ("TP-NEG010"). Clients rely on them.
type ErrorCode string

// Def is one entry of the error registry.
type Def struct {
	Code    ErrorCode
	Status  int // HTTP status (seed 003 §3.4)
	Class   Class
	Message string
	// Numeric is the seed-000 numeric code kept as details.numeric_code, or 0.
	Numeric int
}

// Codes of the registry. They are stable strings relied on by clients.
const (
	CodeMessageFormatInvalid ErrorCode = "message_format_invalid"
	CodeCapabilityLacking    ErrorCode = "capability_lacking"
	CodeAgentNotReady        ErrorCode = "agent_not_ready"
	CodeTaskNotFound         ErrorCode = "task_not_found"
	CodeTaskAlreadyCompleted ErrorCode = "task_already_completed"
	CodeExecutionTimeout     ErrorCode = "execution_timeout"
	CodeExecutionFailed      ErrorCode = "execution_failed"
	CodePermissionDenied     ErrorCode = "permission_denied"
	CodeInvalidParams        ErrorCode = "invalid_params"
	CodeRateLimited          ErrorCode = "rate_limited"

	CodeUnauthorized          ErrorCode = "unauthorized"
	CodeNotFound              ErrorCode = "not_found"
	CodeMethodNotAllowed      ErrorCode = "method_not_allowed"
	CodePayloadTooLarge       ErrorCode = "payload_too_large"
	CodeUnsupportedMedia      ErrorCode = "unsupported_media_type"
	CodeIdempotencyMismatch   ErrorCode = "idempotency_key_reused"
	CodeIdempotencyInFlight   ErrorCode = "idempotency_key_in_flight"
	CodeInternal              ErrorCode = "internal_error"
	CodeAgentRestarted        ErrorCode = "agent_restarted"
	CodeTaskExpired           ErrorCode = "task_expired"
	CodeInvalidStateChange    ErrorCode = "invalid_state_transition"
	CodeCallbackUndeliverable ErrorCode = "callback_undeliverable"
	CodeNotCompliant          ErrorCode = "not_compliant"
	CodePeerUnreachable       ErrorCode = "peer_unreachable"
	CodeTargetRefused         ErrorCode = "outbound_target_refused"
	CodeRequestTimeout        ErrorCode = "request_timeout"
	CodeTooManyConnections    ErrorCode = "too_many_connections"
	CodePeerApprovalPending   ErrorCode = "peer_approval_pending"
	CodeTooManyParked         ErrorCode = "too_many_parked_tasks"
	CodeCommitUnknown         ErrorCode = "commit_outcome_unknown"
	CodeStorageQuota          ErrorCode = "storage_quota_exceeded"

	CodeIDUnknownSender  ErrorCode = "TP-ID003"
	CodeIDDuplicate      ErrorCode = "TP-ID004"
	CodeIDStaleTimestamp ErrorCode = "TP-ID005"
	CodeSecDecrypt       ErrorCode = "TP-SEC003"
	CodeTraHopLimit      ErrorCode = "TP-TRA001"
	CodeValSchema        ErrorCode = "TP-VAL001"
	CodeValUTF8          ErrorCode = "TP-VAL002"
	CodeVerUnsupported   ErrorCode = "TP-VER001"
	CodeSysOverloaded    ErrorCode = "TP-SYS001"
	CodeSysStorage       ErrorCode = "TP-SYS002"

	CodeNegNoTransports    ErrorCode = "TP-NEG001"
	CodeNegNoTiers         ErrorCode = "TP-NEG002"
	CodeNegNoCommonTransp  ErrorCode = "TP-NEG003"
	CodeNegSecurity        ErrorCode = "TP-NEG004"
	CodeNegTier1Mismatch   ErrorCode = "TP-NEG005"
	CodeNegNoLLM           ErrorCode = "TP-NEG006"
	CodeNegContractMissing ErrorCode = "TP-NEG010"
	CodeNegContractUnknown ErrorCode = "TP-NEG011"
	CodeNegContractExpired ErrorCode = "TP-NEG012"
	CodeNegTimeout         ErrorCode = "TP-NEG020"
)

// Numeric codes of seed 000, carried as details.numeric_code.
const (
	NumericTooManyTasks = 4004
	NumericTaskTooLong  = 2004
	NumericStorage      = 5002
)

var registry = func() map[ErrorCode]Def {
	defs := []Def{
		{CodeMessageFormatInvalid, 400, Terminal, "the message is not well formed", 0},
		{CodeCapabilityLacking, 403, Negotiable, "this agent does not support that task type", 0},
		{CodeAgentNotReady, 503, Retriable, "the agent is not ready", 0},
		{CodeTaskNotFound, 404, Terminal, "no task with that id", 0},
		{CodeTaskAlreadyCompleted, 409, Terminal, "the task has already reached a final state", 0},
		{CodeExecutionTimeout, 504, Retriable, "the task exceeded its maximum duration", NumericTaskTooLong},
		{CodeExecutionFailed, 500, Terminal, "the task failed", 0},
		{CodePermissionDenied, 403, Terminal, "the token does not allow this", 0},
		{CodeInvalidParams, 400, Terminal, "invalid parameters", 0},
		{CodeRateLimited, 429, Retriable, "too many concurrent tasks", NumericTooManyTasks},

		{CodeUnauthorized, 401, Terminal, "a valid bearer token is required", 0},
		{CodeNotFound, 404, Terminal, "no such route", 0},
		{CodeMethodNotAllowed, 405, Terminal, "method not allowed on this route", 0},
		{CodePayloadTooLarge, 413, Terminal, "the request body is too large", 0},
		{CodeUnsupportedMedia, 415, Terminal, "unsupported content type", 0},
		{CodeIdempotencyMismatch, 422, Terminal, "the idempotency key was used with a different request", 0},
		{CodeIdempotencyInFlight, 409, Retriable, "a request with this idempotency key is still being processed", 0},
		{CodeInternal, 500, Retriable, "internal error", 0},
		{CodeAgentRestarted, 500, Retriable, "the agent restarted while the task was executing", 0},
		{CodeTaskExpired, 410, Terminal, "the task expired before it ran", 0},
		{CodeInvalidStateChange, 409, Terminal, "that state transition is not allowed", 0},
		{CodeCallbackUndeliverable, 502, Retriable, "the callback could not be delivered", 0},
		{CodeNotCompliant, 422, Terminal, "the agent lacks basic interfaces", 0},
		{CodePeerUnreachable, 502, Retriable, "the other agent could not be reached", 0},
		{CodeTargetRefused, 400, Terminal, "the outbound target is not allowed", 0},
		{CodeRequestTimeout, 408, Retriable, "the request was not received in time", 0},
		{CodeTooManyConnections, 429, Retriable, "too many connections from this address", 0},
		{CodePeerApprovalPending, 401, Retriable, "this agent has not accepted the sender as a peer yet", 0},
		{CodeTooManyParked, 429, Retriable, "too many tasks wait for information or a person", 0},
		{CodeCommitUnknown, 503, Retriable, "the disk failed while storing this; it may or may not be stored: retry with the same Idempotency-Key, which finds it if it was", NumericStorage},
		{CodeStorageQuota, 507, Retriable, "the routine's disk quota is full and its overflow policy is reject_new: retry once space is freed", 0},

		{CodeIDUnknownSender, 401, Terminal, "unknown sender or bad signature", 0},
		{CodeIDDuplicate, 200, Terminal, "duplicate message id; already processed", 0},
		{CodeIDStaleTimestamp, 401, Terminal, "message timestamp outside the replay window", 0},
		{CodeSecDecrypt, 400, Terminal, "the payload could not be decrypted", 0},
		{CodeTraHopLimit, 400, Terminal, "hop count limit exceeded", 0},
		{CodeValSchema, 400, Terminal, "the payload does not match the schema", 0},
		{CodeValUTF8, 400, Terminal, "a string is not valid UTF-8", 0},
		{CodeVerUnsupported, 400, Negotiable, "unsupported protocol major version", 0},
		{CodeSysOverloaded, 503, Retriable, "the agent is overloaded", 0},
		{CodeSysStorage, 500, Retriable, "storage error", 0},

		{CodeNegNoTransports, 400, Terminal, "candidate_transports is empty", 0},
		{CodeNegNoTiers, 400, Terminal, "candidate_tiers is empty", 0},
		{CodeNegNoCommonTransp, 409, Negotiable, "no common transport", 0},
		{CodeNegSecurity, 409, Negotiable, "the requested security level cannot be met", 0},
		{CodeNegTier1Mismatch, 409, Negotiable, "tier 1 needs the same capability, version and descriptor hash", 0},
		{CodeNegNoLLM, 409, Negotiable, "tier 2 needs an LLM backend", 0},
		{CodeNegContractMissing, 428, Negotiable, "protocol_contract_ref is missing and there is no active contract", 0},
		{CodeNegContractUnknown, 404, Negotiable, "the referenced contract does not exist", 0},
		{CodeNegContractExpired, 410, Negotiable, "the referenced contract has expired", 0},
		{CodeNegTimeout, 504, Retriable, "negotiation timed out after 3 retries", 0},
	}
	m := make(map[ErrorCode]Def, len(defs))
	for _, d := range defs {
		if _, dup := m[d.Code]; dup {
			panic("wire: duplicate error code " + string(d.Code))
		}
		m[d.Code] = d
	}
	return m
}()

// withoutPaths is err's text with the directories of the file paths it
// names removed: a client is told "write synapse.db: no space left on
// device", not where the agent keeps its data.
func withoutPaths(err error) string {
	msg := err.Error()
	for e := err; e != nil; {
		var pe *fs.PathError
		if !errors.As(e, &pe) {
			break
		}
		if filepath.IsAbs(pe.Path) {
			msg = strings.ReplaceAll(msg, pe.Path, filepath.Base(pe.Path))
		}
		e = pe.Err
	}
	return msg
}

// NumericCode is the seed-000 numeric code of code (2004 for
// execution_timeout, 4004 for rate_limited, ...), or 0 when it has none.
func NumericCode(code ErrorCode) int { return registry[code].Numeric }

// RetryAfter reports whether a refusal with code asks the client to wait
// a second before it retries (HTTP Retry-After: 1).
func RetryAfter(code ErrorCode) bool {
	switch code {
	case CodeRateLimited, CodeSysOverloaded, CodeTooManyConnections, CodeCommitUnknown:
		return true
	}
	return false
}

// NumericDetails is the details object {"numeric_code": n} of code, where
// a TPError carries it, or nil when code has no numeric code.
func NumericDetails(code ErrorCode) map[string]any {
	if n := NumericCode(code); n != 0 {
		return map[string]any{"numeric_code": n}
	}
	return nil
}

// Lookup returns the registry entry of code.
func Lookup(code ErrorCode) (Def, bool) {
	d, ok := registry[code]
	return d, ok
}

// Codes lists every registered code, sorted.
func Codes() []ErrorCode {
	out := make([]ErrorCode, 0, len(registry))
	for c := range registry {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Error is the TPError shape every client-visible error takes:
//
//	{"error": {"code", "message", "details", "retriable", "correlation_id"}}
//
// As an envelope payload it is the inner object.
type Error struct {
	Code          ErrorCode      `json:"code" msgpack:"code"`
	Message       string         `json:"message" msgpack:"message"`
	Details       map[string]any `json:"details,omitempty" msgpack:"details,omitempty"`
	Retriable     bool           `json:"retriable" msgpack:"retriable"`
	CorrelationID string         `json:"correlation_id,omitempty" msgpack:"correlation_id,omitempty"`
}

// ErrorBody is the HTTP body wrapper of an Error.
type ErrorBody struct {
	Error *Error `json:"error" msgpack:"error"`
}

// Errorf makes an Error for a registered code with a formatted message. An
// empty format uses the registry's default message. The numeric code of the
// registry, if any, is put in details.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	d, ok := registry[code]
	if !ok {
		panic("wire: unregistered error code " + string(code))
	}
	msg := d.Message
	if format != "" {
		for i, a := range args {
			if err, ok := a.(error); ok {
				args[i] = withoutPaths(err)
			}
		}
		msg = fmt.Sprintf(format, args...)
	}
	e := &Error{Code: code, Message: msg, Retriable: d.Class == Retriable}
	if d.Numeric != 0 {
		e.Details = map[string]any{"numeric_code": d.Numeric}
	}
	return e
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status of the error's code.
func (e *Error) Status() int {
	if d, ok := registry[e.Code]; ok {
		return d.Status
	}
	return 500
}

// Class is the class of the error's code.
func (e *Error) Class() Class {
	if d, ok := registry[e.Code]; ok {
		return d.Class
	}
	return Terminal
}

// With returns e with details[key] = value.
func (e *Error) With(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// AsError finds an *Error in err's chain; any other error becomes
// internal_error whose message does not leak the cause.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Errorf(CodeInternal, "")
}
