package infill

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CodeName returns the canonical name of a gRPC status code as the API
// documents it: "INVALID_ARGUMENT", "UNAVAILABLE", "CANCELLED", ...
func CodeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Unknown:
		return "UNKNOWN"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.Aborted:
		return "ABORTED"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.Internal:
		return "INTERNAL"
	case codes.Unavailable:
		return "UNAVAILABLE"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return c.String()
}

// FormatError renders err as one line: "CODE: message" for a gRPC status,
// wrapped or not (with the status's own message), and for a context error
// (CANCELLED or DEADLINE_EXCEEDED); the error's text otherwise. Line breaks
// in messages become spaces.
func FormatError(err error) string {
	if err == nil {
		return ""
	}
	var line string
	var grpcErr interface{ GRPCStatus() *status.Status }
	if errors.As(err, &grpcErr) {
		st := grpcErr.GRPCStatus()
		line = CodeName(st.Code()) + ": " + st.Message()
	} else if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		st := status.FromContextError(err)
		line = CodeName(st.Code()) + ": " + st.Message()
	} else {
		line = err.Error()
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(line)
}
