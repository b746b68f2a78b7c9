package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/inference"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// toStatus maps a domain error to a gRPC status. It is the only place where
// domain errors become status codes.
func toStatus(log *zap.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // already a status (validation in this package)
	}
	var ae *contextpack.ArgumentError
	var me *contextpack.MissingContentError
	var se *contextpack.UnknownSnapshotError
	var oe *inference.OptionError
	switch {
	case errors.As(err, &ae):
		return withDetails(codes.InvalidArgument, err.Error(), &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: ae.Field, Description: ae.Reason}},
		})
	case errors.As(err, &me):
		return withDetails(codes.FailedPrecondition, err.Error(), missingContent(me.Paths))
	case errors.As(err, &se):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "SNAPSHOT", Subject: se.ID,
				Description: "the server does not hold this repository snapshot: send the whole file list without base"}},
		})
	case errors.As(err, &oe):
		return withDetails(codes.InvalidArgument, err.Error(), &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "generation." + oe.Field, Description: oe.Reason}},
		})
	case errors.Is(err, contextpack.ErrBudget):
		return withDetails(codes.InvalidArgument, err.Error(), &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "token_budget", Description: err.Error()}},
		})
	case errors.Is(err, contextpack.ErrInvalidArgument), errors.Is(err, inference.ErrInvalidRequest):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, evaluator.ErrInvalidTask), errors.Is(err, evaluator.ErrNoCompleter):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, evaluator.ErrRepoNotAllowed):
		return status.Error(codes.PermissionDenied, err.Error())
	case errors.Is(err, dataset.ErrUnknownBenchmark):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, evaluator.ErrJournalBusy):
		return status.Error(codes.Aborted, err.Error())
	case errors.Is(err, dataset.ErrInvalidData), errors.Is(err, evaluator.ErrCorruptJournal),
		errors.Is(err, sandbox.ErrUnavailable):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, inference.ErrPromptTooLong):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, inference.ErrModelNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, inference.ErrUnavailable), errors.Is(err, inference.ErrIncomplete):
		return status.Error(codes.Unavailable, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request cancelled by the client")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	if log != nil {
		log.Error("unclassified error", zap.Error(err))
	}
	return status.Error(codes.Internal, "internal error: "+err.Error())
}

// maxMissingListed bounds the bytes of paths listed in a MISSING_CONTENT
// error: its details travel in the response trailer, which clients cap
// (20,000 long paths made one too large to deliver).
const maxMissingListed = 64 << 10

// missingContent lists the paths to resend, one MISSING_CONTENT violation
// each, up to maxMissingListed bytes; the rest are counted in one
// MISSING_CONTENT_MORE violation, which asks for every digest's content.
func missingContent(paths []string) *errdetails.PreconditionFailure {
	pf := &errdetails.PreconditionFailure{}
	size := 0
	for i, p := range paths {
		if size += len(p); size > maxMissingListed {
			pf.Violations = append(pf.Violations, &errdetails.PreconditionFailure_Violation{
				Type: "MISSING_CONTENT_MORE", Description: fmt.Sprintf(
					"%d more files sent as digests are not held and not listed: resend every file sent as a digest with content", len(paths)-i),
			})
			break
		}
		pf.Violations = append(pf.Violations, &errdetails.PreconditionFailure_Violation{
			Type: "MISSING_CONTENT", Subject: p, Description: "the server does not hold this digest: resend the file with content",
		})
	}
	return pf
}

func withDetails(c codes.Code, msg string, details ...protoadapt.MessageV1) error {
	st := status.New(c, msg)
	for _, d := range details {
		if s, err := st.WithDetails(d); err == nil {
			st = s
		}
	}
	return st.Err()
}

// annotate prefixes the status message of err (mapped by toStatus), keeping
// its code and details, e.g. to say which request of a stream was bad.
func annotate(log *zap.Logger, err error, prefix string) error {
	p := status.Convert(toStatus(log, err)).Proto()
	p.Message = prefix + ": " + p.Message
	return status.ErrorProto(p)
}
