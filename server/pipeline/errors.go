package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/infill-dev/infill/contextpack"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/internal/errkind"
)

// Kind is what went wrong with a call, independent of transport
// (errkind.Kind); each surface maps kinds to its own codes in one table
// (gRPC codes, HTTP statuses).
type Kind = errkind.Kind

// Error kinds, named after the gRPC codes they map to.
const (
	KindInternal        = errkind.Internal
	KindInvalidArgument = errkind.InvalidArgument
	// KindMissingContent: digests the server does not hold (Paths lists
	// them); the client resends their content.
	KindMissingContent = errkind.MissingContent
	// KindUnknownSnapshot: a base the server does not hold (Subject).
	KindUnknownSnapshot    = errkind.UnknownSnapshot
	KindFailedPrecondition = errkind.FailedPrecondition
	KindNotFound           = errkind.NotFound
	KindPermissionDenied   = errkind.PermissionDenied
	KindAborted            = errkind.Aborted
	KindUnavailable        = errkind.Unavailable
	KindResourceExhausted  = errkind.ResourceExhausted
	KindCanceled           = errkind.Canceled
	KindDeadlineExceeded   = errkind.DeadlineExceeded
	KindUnauthenticated    = errkind.Unauthenticated
)

// Classified is an error's kind plus what a surface needs to report it.
type Classified struct {
	Kind Kind
	// Message is safe to show the client: it never holds the server's
	// paths (errkind.ClientMessage).
	Message string
	// Hidden is set when Message leaves out detail that the error's own
	// text holds: the surface logs the error whole.
	Hidden bool
	// Field names the request field at fault (InvalidArgument), as in the
	// gRPC API.
	Field, Reason string
	// Paths are the files to resend (KindMissingContent).
	Paths []string
	// Subject is the unknown snapshot (KindUnknownSnapshot).
	Subject string
	// RetryAfter is when to try again (KindResourceExhausted).
	RetryAfter time.Duration
}

// Classify maps an error to its kind. The errors of the packages the
// pipeline calls (contextpack, inference) and its own are sorted here, with
// the details a surface reports (field, paths, snapshot); any other domain
// error (the evaluator's, the sandbox's, the datasets', auth's) reports its
// own kind (errkind.Of), so the pipeline imports none of them. The
// transports only translate kinds.
func Classify(err error) Classified {
	c := Classified{Kind: KindInternal, Message: errkind.ClientMessage(err)}
	c.Hidden = c.Message != err.Error()
	var ae *contextpack.ArgumentError
	var me *contextpack.MissingContentError
	var se *contextpack.UnknownSnapshotError
	var oe *inference.OptionError
	var ov *OverloadError
	kind, kinded := errkind.Of(err)
	switch {
	case errors.As(err, &ov):
		c.Kind, c.RetryAfter = KindResourceExhausted, ov.RetryAfter
	case errors.Is(err, ErrSuperseded):
		c.Kind = KindCanceled
	case errors.As(err, &ae):
		c.Kind, c.Field, c.Reason = KindInvalidArgument, ae.Field, ae.Reason
	case errors.As(err, &me):
		c.Kind, c.Paths = KindMissingContent, me.Paths
	case errors.As(err, &se):
		c.Kind, c.Subject = KindUnknownSnapshot, se.ID
	case errors.As(err, &oe):
		c.Kind, c.Field, c.Reason = KindInvalidArgument, "generation."+oe.Field, oe.Reason
	case errors.Is(err, contextpack.ErrBudget):
		c.Kind, c.Field, c.Reason = KindInvalidArgument, "token_budget", err.Error()
	case errors.Is(err, contextpack.ErrInvalidArgument), errors.Is(err, inference.ErrInvalidRequest):
		c.Kind = KindInvalidArgument
	case errors.Is(err, inference.ErrModelNotFound):
		c.Kind = KindNotFound
	case errors.Is(err, inference.ErrPromptTooLong):
		c.Kind = KindFailedPrecondition
	case errors.Is(err, inference.ErrUnavailable), errors.Is(err, inference.ErrIncomplete):
		c.Kind = KindUnavailable
	case kinded:
		c.Kind, c.RetryAfter = kind, errkind.RetryDelay(err)
	case errors.Is(err, context.Canceled):
		c.Kind, c.Message = KindCanceled, "request cancelled by the client"
	case errors.Is(err, context.DeadlineExceeded):
		c.Kind, c.Message = KindDeadlineExceeded, "deadline exceeded"
	}
	return c
}
