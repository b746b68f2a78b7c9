package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/dataset"
	"github.com/infill-dev/infill/evaluator/sandbox"
	"github.com/infill-dev/infill/server/auth"
)

// The domain errors the pipeline does not import report their own kinds
// (internal/errkind); the one table maps them to the codes they had when
// the pipeline sorted them by name, wrapped or not.
func TestDomainErrorCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{evaluator.ErrInvalidTask, codes.InvalidArgument},
		{evaluator.ErrNoCompleter, codes.InvalidArgument},
		{evaluator.ErrRepoNotAllowed, codes.PermissionDenied},
		{evaluator.ErrJournalBusy, codes.Aborted},
		{evaluator.ErrCorruptJournal, codes.FailedPrecondition},
		{dataset.ErrUnknownBenchmark, codes.NotFound},
		{dataset.ErrInvalidData, codes.FailedPrecondition},
		{sandbox.ErrUnavailable, codes.FailedPrecondition},
		{auth.ErrUnauthenticated, codes.Unauthenticated},
		{auth.ErrPermissionDenied, codes.PermissionDenied},
		{&auth.LimitError{Reason: "r", RetryAfter: 2 * time.Second}, codes.ResourceExhausted},
		{sandbox.ErrSetup, codes.Internal},
	} {
		for _, err := range []error{tc.err, fmt.Errorf("task t: %w", tc.err)} {
			st, _ := status.FromError(toStatus(context.Background(), nil, err))
			if st.Code() != tc.code {
				t.Errorf("%v: code %v, want %v", err, st.Code(), tc.code)
			}
		}
	}
	st, _ := status.FromError(toStatus(context.Background(), nil, &auth.LimitError{Reason: "r", RetryAfter: 2 * time.Second}))
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.RetryDelay.AsDuration() != 2*time.Second {
		t.Errorf("a LimitError's status carries retry info %v, want 2s", retry)
	}
}
