package server

import (
	"context"
	"fmt"
	"time"

	"github.com/infill-dev/infill/internal/logctx"
	"github.com/infill-dev/infill/server/pipeline"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// toStatus maps a domain error to a gRPC status: pipeline.Classify sorts
// the error, and this is the one table from its kinds to codes. Detail the
// client is not shown (the server's paths) is logged with the call's
// request id (ctx's log fields, internal/logctx).
func toStatus(ctx context.Context, log *zap.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err // already a status (validation in this package)
	}
	c := pipeline.Classify(err)
	if c.Hidden && c.Kind != pipeline.KindInternal && log != nil {
		logctx.From(ctx, log).Info("error detail not shown to the client", zap.Error(err))
	}
	switch c.Kind {
	case pipeline.KindInvalidArgument:
		if c.Field == "" {
			return status.Error(codes.InvalidArgument, c.Message)
		}
		return withDetails(codes.InvalidArgument, c.Message, &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: c.Field, Description: c.Reason}},
		})
	case pipeline.KindMissingContent:
		return withDetails(codes.FailedPrecondition, c.Message, missingContent(c.Paths))
	case pipeline.KindUnknownSnapshot:
		return withDetails(codes.FailedPrecondition, c.Message, &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "SNAPSHOT", Subject: c.Subject,
				Description: "the server does not hold this repository snapshot: send the whole file list without base"}},
		})
	case pipeline.KindResourceExhausted:
		return withDetails(codes.ResourceExhausted, c.Message, &errdetails.RetryInfo{
			RetryDelay: durationpb.New(max(c.RetryAfter, time.Millisecond)),
		})
	case pipeline.KindInternal:
		if log != nil {
			logctx.From(ctx, log).Error("unclassified error", zap.Error(err))
		}
		return status.Error(codes.Internal, "internal error: "+c.Message)
	}
	return status.Error(kindCodes[c.Kind], c.Message)
}

// kindCodes maps the kinds that carry no details.
var kindCodes = map[pipeline.Kind]codes.Code{
	pipeline.KindFailedPrecondition: codes.FailedPrecondition,
	pipeline.KindNotFound:           codes.NotFound,
	pipeline.KindPermissionDenied:   codes.PermissionDenied,
	pipeline.KindAborted:            codes.Aborted,
	pipeline.KindUnavailable:        codes.Unavailable,
	pipeline.KindResourceExhausted:  codes.ResourceExhausted,
	pipeline.KindCanceled:           codes.Canceled,
	pipeline.KindDeadlineExceeded:   codes.DeadlineExceeded,
	pipeline.KindUnauthenticated:    codes.Unauthenticated,
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
func annotate(ctx context.Context, log *zap.Logger, err error, prefix string) error {
	p := status.Convert(toStatus(ctx, log, err)).Proto()
	p.Message = prefix + ": " + p.Message
	return status.ErrorProto(p)
}
