package infill

import (
	"context"
	"errors"
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
	var resp *infillv1.PredictEditResponse
	ctx = c.sessionContext(ctx, req.GetClientId(), req.GetSessionId())
	err := c.do(ctx, req.GetRepository(), req.GetCursor().GetPath(), func(ctx context.Context, repo *infillv1.Repository) (bool, string, error) {
		out, err := c.rpc.PredictEdit(ctx, withRepository(req, repo, c.cfg.ClientID), opts...)
		if err != nil {
			return false, "", err
		}
		resp = out
		return false, out.GetRepositorySnapshot(), nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// StreamPredictEdit streams an edit prediction as Stream streams a
// completion: the StreamStart (held back until the first TextDelta or the
// final response), each TextDelta of the model's output, and the final
// PredictEditResponse; or a single non-nil error. UNAVAILABLE before the
// first TextDelta is retried; stopping the loop or cancelling ctx cancels
// the call.
func (c *Client) StreamPredictEdit(ctx context.Context, req *infillv1.StreamPredictEditRequest, opts ...grpc.CallOption) iter.Seq2[*infillv1.StreamPredictEditResponse, error] {
	return func(yield func(*infillv1.StreamPredictEditResponse, error) bool) {
		ctx, cancel := context.WithCancel(c.sessionContext(ctx, req.GetClientId(), req.GetSessionId()))
		defer cancel()
		err := c.do(ctx, req.GetRepository(), req.GetCursor().GetPath(), func(ctx context.Context, repo *infillv1.Repository) (bool, string, error) {
			r := withRepository(req, repo, c.cfg.ClientID)
			open := func(ctx context.Context) (grpc.ServerStreamingClient[infillv1.StreamPredictEditResponse], error) {
				return c.rpc.StreamPredictEdit(ctx, r, opts...)
			}
			return streamOnce(ctx, c.log, open, predictEvent, yield)
		})
		if err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
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
