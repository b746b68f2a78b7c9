package infill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
)

// ErrNoFinalResponse is returned when a stream ends without its final
// CompleteResponse: the server broke the protocol and the text is partial.
var ErrNoFinalResponse = errors.New("stream ended without a final response")

// maxResends bounds the rounds of resending content the server reported
// missing within one call. A server that restarted can ask for three in a
// row (an edit's base text, the snapshot, the files sent as digests); one
// more covers an eviction between them.
const maxResends = 4

// Client calls the infill CompletionService. It is safe for concurrent use.
type Client struct {
	conn  *grpc.ClientConn // nil when the caller owns the connection
	rpc   infillv1.CompletionServiceClient
	eval  infillv1.EvaluationServiceClient
	cfg   Config
	log   *zap.Logger
	held  *digestSet
	snaps perRepo[clientSnap] // the latest snapshot per repository
	texts perRepo[lastText]   // the cursor file's last text per repository
	memo  *digestMemo         // the digest of each path's last content

	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// rand returns a number in [0, 1) for jitter; tests replace it.
	rand func() float64
}

// Dial creates a client for target (e.g. "localhost:50051",
// "unix:///run/infill.sock"). The connection is made lazily, on the first
// call. A nil log discards the client's logs (retries are logged at Debug).
func Dial(target string, cfg Config, log *zap.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	opts := []grpc.DialOption{
		grpc.WithKeepaliveParams(cfg.Keepalive),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(cfg.MaxMessageBytes),
			grpc.MaxCallSendMsgSize(cfg.MaxMessageBytes),
			grpc.ForceCodecV2(infillv1.Codec()),
		),
	}
	if cfg.TLS != nil {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg.TLS)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if cfg.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken{
			token: cfg.Token, requireTLS: !cfg.AllowTokenWithoutTLS}))
	}
	opts = append(opts, cfg.DialOptions...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	c := newClient(conn, cfg, log)
	c.conn = conn
	return c, nil
}

// NewClient wraps a connection the caller made and keeps owning: Close does
// not close it. Config's transport fields (TLS, Token, Keepalive,
// MaxMessageBytes, DialOptions) are not applied; they belong to the dial.
func NewClient(conn grpc.ClientConnInterface, cfg Config, log *zap.Logger) (*Client, error) {
	check := cfg
	check.Token = "" // not applied here: the caller's dial carries credentials
	if err := check.Validate(); err != nil {
		return nil, err
	}
	return newClient(conn, cfg.withDefaults(), log), nil
}

func newClient(conn grpc.ClientConnInterface, cfg Config, log *zap.Logger) *Client {
	if log == nil {
		log = zap.NewNop()
	}
	return &Client{
		rpc:   infillv1.NewCompletionServiceClient(conn),
		eval:  infillv1.NewEvaluationServiceClient(conn),
		cfg:   cfg,
		log:   log,
		held:  newDigestSet(cfg.DigestCacheSize),
		memo:  &digestMemo{max: defaultMemoBytes},
		sleep: sleepCtx,
		rand:  rand.Float64,
	}
}

// Evaluation returns the EvaluationService stub on the client's connection
// (same credentials, keepalive and message limits). Its calls are not
// retried: Evaluate and RunBenchmark are long streams whose callers resume
// from their own results (see the infill tool's `eval run`).
func (c *Client) Evaluation() infillv1.EvaluationServiceClient { return c.eval }

// Close closes the connection Dial made.
func (c *Client) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// Complete asks for completions and waits for all candidates. UNAVAILABLE
// is retried (nothing has reached the caller yet); content the server
// reports missing is resent.
func (c *Client) Complete(ctx context.Context, req *infillv1.CompleteRequest, opts ...grpc.CallOption) (*infillv1.CompleteResponse, error) {
	return unary(c, ctx, req, func(ctx context.Context, r *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		return c.rpc.Complete(ctx, r, opts...)
	})
}

// request is what the calls' requests share.
type request interface {
	proto.Message
	GetRepository() *infillv1.Repository
	GetCursor() *infillv1.Cursor
	GetClientId() string
	GetSessionId() string
}

// unary runs a unary call of req through do (digests, deltas, resends,
// retries), sending req with the repository do prepares.
func unary[Req request, Resp interface{ GetRepositorySnapshot() string }](c *Client, ctx context.Context, req Req,
	call func(context.Context, Req) (Resp, error)) (Resp, error) {
	var resp Resp
	ctx = c.sessionContext(ctx, req.GetClientId(), req.GetSessionId())
	err := c.do(ctx, req.GetRepository(), req.GetCursor().GetPath(), func(ctx context.Context, repo *infillv1.Repository) (bool, string, error) {
		out, err := call(ctx, withRepository(req, repo, c.cfg.ClientID))
		if err != nil {
			return false, "", err
		}
		resp = out
		return false, out.GetRepositorySnapshot(), nil
	})
	return resp, err
}

// errStopped tells do that the consumer stopped iterating.
var errStopped = errors.New("consumer stopped")

// Stream streams a completion. The iterator yields one attempt's events:
// StreamStart (held back until the first TextDelta or the final response),
// each TextDelta, and the final CompleteResponse; or it ends with a single
// non-nil error. UNAVAILABLE before the first TextDelta is retried.
// Stopping the loop early, or cancelling ctx, cancels the call.
//
// The iterator runs the call each time it is ranged over.
func (c *Client) Stream(ctx context.Context, req *infillv1.StreamCompleteRequest, opts ...grpc.CallOption) iter.Seq2[*infillv1.StreamCompleteResponse, error] {
	return streamed(c, ctx, req, func(ctx context.Context, r *infillv1.StreamCompleteRequest) (grpc.ServerStreamingClient[infillv1.StreamCompleteResponse], error) {
		return c.rpc.StreamComplete(ctx, r, opts...)
	}, completionEvent)
}

// streamed is a streaming call of req through do, as Stream describes:
// open starts an attempt with the repository do prepares, kind sorts its
// events.
func streamed[Req request, R any](c *Client, ctx context.Context, req Req,
	open func(context.Context, Req) (grpc.ServerStreamingClient[R], error), kind func(*R) (streamEvent, string)) iter.Seq2[*R, error] {
	return func(yield func(*R, error) bool) {
		ctx, cancel := context.WithCancel(c.sessionContext(ctx, req.GetClientId(), req.GetSessionId()))
		defer cancel()
		err := c.do(ctx, req.GetRepository(), req.GetCursor().GetPath(), func(ctx context.Context, repo *infillv1.Repository) (bool, string, error) {
			r := withRepository(req, repo, c.cfg.ClientID)
			return streamOnce(ctx, c.log, func(ctx context.Context) (grpc.ServerStreamingClient[R], error) { return open(ctx, r) }, kind, yield)
		})
		if err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
}

// streamOnce runs one attempt of a streaming call (open starts it, kind
// sorts its events). It reports whether anything beyond the start event
// reached the consumer (after which the call is not retried) and the
// repository snapshot the start named.
func streamOnce[R any](ctx context.Context, log *zap.Logger, open func(context.Context) (grpc.ServerStreamingClient[R], error),
	kind func(*R) (streamEvent, string), yield func(*R, error) bool) (delivered bool, snapshot string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := open(ctx)
	if err != nil {
		return false, "", err
	}
	var start *R
	emit := func(m *R) bool {
		if start != nil {
			s := start
			start = nil
			delivered = true
			if !yield(s, nil) {
				return false
			}
		}
		delivered = true
		return yield(m, nil)
	}
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return delivered, snapshot, ErrNoFinalResponse
		}
		if err != nil {
			return delivered, snapshot, err
		}
		switch ev, snap := kind(m); ev {
		case eventStart:
			start, snapshot = m, snap
		case eventDelta:
			if !emit(m) {
				return true, snapshot, errStopped
			}
		case eventDone:
			if !emit(m) {
				return true, snapshot, errStopped
			}
			// Read the end of the stream so the server finishes with OK
			// rather than seeing a cancel.
			if _, err := st.Recv(); err != nil && err != io.EOF {
				log.Debug("stream: error after final response", zap.Error(err))
			}
			return true, snapshot, nil
		default:
			log.Debug("stream: ignoring unknown event")
		}
	}
}

// streamEvent is what a streamed message is.
type streamEvent int

const (
	eventUnknown streamEvent = iota
	eventStart               // held back until the next event
	eventDelta
	eventDone
)

// completionEvent sorts a StreamComplete message.
func completionEvent(m *infillv1.StreamCompleteResponse) (streamEvent, string) {
	switch m.GetEvent().(type) {
	case *infillv1.StreamCompleteResponse_Start:
		return eventStart, m.GetStart().GetRepositorySnapshot()
	case *infillv1.StreamCompleteResponse_Delta:
		return eventDelta, ""
	case *infillv1.StreamCompleteResponse_Done:
		return eventDone, ""
	}
	return eventUnknown, ""
}

// do runs one call with digest substitution, resending of missing content,
// and retries of UNAVAILABLE. call reports whether it delivered anything to
// the caller, after which nothing is retried.
func (c *Client) do(ctx context.Context, repo *infillv1.Repository, cursor string,
	call func(ctx context.Context, repo *infillv1.Repository) (delivered bool, snapshot string, err error)) error {
	forced := map[string]bool{}
	resends := 0
	noBase := false
	for attempt := 1; ; {
		p := c.prepare(repo, cursor, forced, noBase)
		delivered, snapshot, err := call(ctx, p.repo)
		if err == nil || delivered {
			c.accept(p, snapshot)
		}
		if err == nil {
			return nil
		}
		if delivered {
			return err
		}
		if p.base != "" && UnknownSnapshot(err) && resends < maxResends {
			c.snaps.forget(p.repoName, func(sn clientSnap) bool { return sn.id == p.base })
			noBase = true
			resends++
			c.log.Debug("the server no longer holds the repository snapshot; sending the whole list")
			continue
		}
		paths, more := MissingContent(err)
		if more {
			for path := range p.digests { // not all listed: every digest sent
				paths = append(paths, path)
			}
		}
		if len(paths) > 0 && resends < maxResends {
			if p.resendable(paths) {
				for _, path := range paths {
					forced[path] = true
					if d, ok := p.digests[path]; ok {
						c.held.remove(d)
					}
				}
				resends++
				c.log.Debug("resending content the server is missing", zap.Int("files", len(paths)))
				continue
			}
		}
		if status.Code(err) != codes.Unavailable || attempt >= c.cfg.Retry.MaxAttempts || ctx.Err() != nil {
			return err
		}
		wait := c.backoff(attempt)
		c.log.Debug("retrying after UNAVAILABLE", zap.Int("attempt", attempt),
			zap.Duration("backoff", wait), zap.Error(err))
		if err := c.sleep(ctx, wait); err != nil {
			return status.FromContextError(err).Err()
		}
		attempt++
	}
}

// backoff returns the wait after the given failed attempt (1-based).
func (c *Client) backoff(attempt int) time.Duration {
	p := c.cfg.Retry
	d := float64(p.InitialBackoff) * math.Pow(p.Multiplier, float64(attempt-1))
	if d > float64(p.MaxBackoff) {
		d = float64(p.MaxBackoff)
	}
	d *= 1 + p.Jitter*(2*c.rand()-1)
	if d > float64(p.MaxBackoff) {
		d = float64(p.MaxBackoff)
	}
	return time.Duration(d)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SessionHeader is the request metadata that names a call's session,
// "client_id/session_id", sent when the request has a session_id. infill
// replicas hold repository content by digest, each its own: a load
// balancer in front of several that hashes on this header (Envoy's
// ring_hash with a header hash policy, NGINX's `hash $http_x_infill_session
// consistent`) keeps a session on one replica, which then holds its files
// and answers without asking for them again. Without affinity every answer
// is still right: a replica that lacks the files answers
// FAILED_PRECONDITION and the client resends them.
const SessionHeader = "x-infill-session"

// sessionContext adds SessionHeader to ctx when the request has a session.
func (c *Client) sessionContext(ctx context.Context, clientID, sessionID string) context.Context {
	if sessionID == "" {
		return ctx
	}
	if clientID == "" {
		clientID = c.cfg.ClientID
	}
	return metadata.AppendToOutgoingContext(ctx, SessionHeader, clientID+"/"+sessionID)
}

// withRepository returns a shallow copy of req with its repository replaced
// and client_id filled in; req itself is never modified.
func withRepository[T interface {
	proto.Message
	GetClientId() string
}](req T, repo *infillv1.Repository, clientID string) T {
	src := req.ProtoReflect()
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		dst.Set(fd, v)
		return true
	})
	fields := dst.Descriptor().Fields()
	if repo != nil {
		dst.Set(fields.ByName("repository"), protoreflect.ValueOfMessage(repo.ProtoReflect()))
	}
	if req.GetClientId() == "" && clientID != "" {
		dst.Set(fields.ByName("client_id"), protoreflect.ValueOfString(clientID))
	}
	return dst.Interface().(T)
}

// bearerToken is a static token sent as gRPC per-RPC credentials. Written
// here because grpc's oauth package would pull in golang.org/x/oauth2 for
// what is one header.
type bearerToken struct {
	token      string
	requireTLS bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearerToken) RequireTransportSecurity() bool { return b.requireTLS }
