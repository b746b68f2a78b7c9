package infill

import (
	"context"
	"iter"

	"google.golang.org/grpc"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// PredictEdit asks for the user's next edit and waits for it. Like
// Complete, it sends the repository as a delta on the server's last
// snapshot (content the server holds as digests, the cursor file as an
// edit), resends content the server reports missing and retries
// UNAVAILABLE.
func (c *Client) PredictEdit(ctx context.Context, req *infillv1.PredictEditRequest, opts ...grpc.CallOption) (*infillv1.PredictEditResponse, error) {
	return unary(c, ctx, req, func(ctx context.Context, r *infillv1.PredictEditRequest) (*infillv1.PredictEditResponse, error) {
		return c.rpc.PredictEdit(ctx, r, opts...)
	})
}

// StreamPredictEdit streams an edit prediction as Stream streams a
// completion: the StreamStart (held back until the first TextDelta or the
// final response), each TextDelta of the model's output, and the final
// PredictEditResponse; or a single non-nil error. UNAVAILABLE before the
// first TextDelta is retried; stopping the loop or cancelling ctx cancels
// the call.
func (c *Client) StreamPredictEdit(ctx context.Context, req *infillv1.StreamPredictEditRequest, opts ...grpc.CallOption) iter.Seq2[*infillv1.StreamPredictEditResponse, error] {
	return streamed(c, ctx, req, func(ctx context.Context, r *infillv1.StreamPredictEditRequest) (grpc.ServerStreamingClient[infillv1.StreamPredictEditResponse], error) {
		return c.rpc.StreamPredictEdit(ctx, r, opts...)
	}, predictEvent)
}

// predictEvent sorts a StreamPredictEdit message.
func predictEvent(m *infillv1.StreamPredictEditResponse) (streamEvent, string) {
	switch m.GetEvent().(type) {
	case *infillv1.StreamPredictEditResponse_Start:
		return eventStart, m.GetStart().GetRepositorySnapshot()
	case *infillv1.StreamPredictEditResponse_Delta:
		return eventDelta, ""
	case *infillv1.StreamPredictEditResponse_Done:
		return eventDone, ""
	}
	return eventUnknown, ""
}
