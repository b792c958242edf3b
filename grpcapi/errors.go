//go:build grpc

package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/synapse-edge/synapse/wire"
)

// ErrorDomain is the errdetails.ErrorInfo domain of Synapse errors; the
// reason is the TPError code (e.g. "not_found", "TP-ID003").
const ErrorDomain = "synapse"

// Code maps an HTTP status of the error registry to a gRPC code (seed 003
// §3.4, with the statuses the seed does not list mapped like
// google.golang.org/genproto's HTTP rules). A 409 whose error is
// retriable (a request still in flight) is Aborted, any other
// AlreadyExists.
func Code(httpStatus int, retriable bool) codes.Code {
	switch httpStatus {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent:
		return codes.OK
	case http.StatusBadRequest, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound, http.StatusGone:
		return codes.NotFound
	case http.StatusConflict:
		if retriable {
			return codes.Aborted
		}
		return codes.AlreadyExists
	case http.StatusTooManyRequests, http.StatusRequestEntityTooLarge:
		return codes.ResourceExhausted
	case http.StatusPreconditionFailed, http.StatusMethodNotAllowed:
		return codes.FailedPrecondition
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return codes.Unavailable
	case http.StatusInternalServerError:
		return codes.Internal
	}
	if httpStatus >= 400 && httpStatus < 500 {
		return codes.FailedPrecondition
	}
	return codes.Internal
}

// toStatus turns an error of the service layer into a gRPC status error.
// A *wire.Error keeps its message and carries its code, details and
// correlation_id in an ErrorInfo and, when retriable, a RetryInfo (with
// REST's Retry-After of 1 s where REST sends one); context errors become
// Canceled or DeadlineExceeded; anything else is Internal without its
// cause.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	e := wire.AsError(err)
	st := status.New(Code(e.Status(), e.Retriable), e.Message)
	info := &errdetails.ErrorInfo{Reason: string(e.Code), Domain: ErrorDomain, Metadata: map[string]string{}}
	for k, v := range e.Details {
		info.Metadata[k] = fmt.Sprint(v)
	}
	if e.CorrelationID != "" {
		info.Metadata["correlation_id"] = e.CorrelationID
	}
	details := []protoadapt.MessageV1{info}
	if e.Retriable {
		// REST's "retriable": true, and its Retry-After where it sends one.
		ri := &errdetails.RetryInfo{}
		if wire.RetryAfter(e.Code) {
			ri.RetryDelay = durationpb.New(time.Second)
		}
		details = append(details, ri)
	}
	if withInfo, derr := st.WithDetails(details...); derr == nil {
		st = withInfo
	}
	return st.Err()
}

// ErrorCode returns the TPError code carried by a status error from this
// server, or "".
func ErrorCode(err error) wire.ErrorCode {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain {
			return wire.ErrorCode(info.Reason)
		}
	}
	return ""
}
