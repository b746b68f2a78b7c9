package servertest

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc/status"

	"github.com/infill-dev/infill/inference/ollamatest"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// StormStream is an ollamatest.StreamFunc over infill's StreamComplete, for
// a cancel storm through the server (ollamatest.Storm): first is called at
// the first non-empty text delta. The error it returns is the call's
// status as "CODE: message" (StatusError), so outcomes group by both.
func StormStream(client infillv1.CompletionServiceClient, req *infillv1.StreamCompleteRequest) ollamatest.StreamFunc {
	return func(ctx context.Context, first func()) error {
		st, err := client.StreamComplete(ctx, req)
		if err != nil {
			return StatusError(err)
		}
		for {
			m, err := st.Recv()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return StatusError(err)
			}
			if d := m.GetDelta(); d != nil && d.Text != "" {
				first()
			}
		}
	}
}

// StatusError turns a gRPC error into "CODE: message", without the Go
// error's "rpc error: code = ... desc = ..." wrapping.
func StatusError(err error) error {
	st := status.Convert(err)
	return errors.New(st.Code().String() + ": " + st.Message())
}
