package infill_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/infill-dev/infill/clients/go/infill"
	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// callLog records, per attempt the client makes, which replica it reached,
// its status code and the session header it carried.
type callLog struct {
	mu       sync.Mutex
	replicas []string
	codes    []codes.Code
	sessions []string
}

func (l *callLog) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var p peer.Peer
	err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Peer(&p))...)
	md, _ := metadata.FromOutgoingContext(ctx)
	addr := ""
	if p.Addr != nil {
		addr = p.Addr.String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replicas = append(l.replicas, addr)
	l.codes = append(l.codes, status.Code(err))
	l.sessions = append(l.sessions, strings.Join(md.Get(infill.SessionHeader), ","))
	return err
}

// alternating is a connection that sends each call to the replica its
// context names (replicaKey), as a load balancer with no session affinity
// may: the attempts of one Complete (a resend) go to the same replica.
type alternating struct{ conns []*grpc.ClientConn }

type replicaKey struct{}

func (a *alternating) pick(ctx context.Context) *grpc.ClientConn {
	i, _ := ctx.Value(replicaKey{}).(int)
	return a.conns[i%len(a.conns)]
}

func (a *alternating) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return a.pick(ctx).Invoke(ctx, method, args, reply, opts...)
}

func (a *alternating) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return a.pick(ctx).NewStream(ctx, desc, method, opts...)
}

// TestReplicasAlternating: two infill replicas behind one client that
// alternates between them (as a load balancer with no session affinity
// may). Each replica holds repository content by digest,
// its own; the one that lacks a file answers FAILED_PRECONDITION, the
// client resends it, and every answer is built from exactly the text the
// editor has: each prompt equals the one a third server builds from the
// whole content. The session header a balancer would hash on travels on
// every call.
func TestReplicasAlternating(t *testing.T) {
	t.Parallel()
	rec := &promptServer{} // both replicas generate through it: one ordered prompt log
	a, b := servertest.StartLocal(t, rec), servertest.StartLocal(t, rec)
	ref := startPromptServer(t)

	// One client whose keystrokes go to the replicas in turn.
	log := &callLog{}
	var conns []*grpc.ClientConn
	for _, addr := range []string{a.Addr, b.Addr} {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithChainUnaryInterceptor(log.intercept),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(infillv1.Codec())))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		conns = append(conns, cc)
	}
	c, err := infill.NewClient(&alternating{conns: conns}, infill.Config{Transfer: infill.TransferDeltas}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := infill.Dial(ref.addr, infill.Config{Transfer: infill.TransferWhole}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })

	body := strings.Repeat("def area(r):\n    return 3.14159 * r * r\n\n", 40)
	content := "import math\n\n" + body
	off := len("import math\n")
	// Keys 0-11 alternate between the replicas; from key 12 on, every call
	// goes to replica 0, as a balancer hashing on the session header sends
	// them.
	const keys, alternate = 20, 12
	affinityFrom := 0 // the first attempt of the affinity phase in log
	for step := range keys {
		replica := step
		if step >= alternate {
			replica = 0
		}
		if step == alternate {
			log.mu.Lock()
			affinityFrom = len(log.codes)
			log.mu.Unlock()
		}
		content = content[:off] + string(rune('a'+step)) + content[off:]
		off++
		util := fmt.Sprintf("# util, version %d\n", step/4) + body // changes now and then
		req := &infillv1.CompleteRequest{
			Repository: &infillv1.Repository{Name: "geo", Files: []*infillv1.File{
				{Path: "geo/circle.py", Content: proto.String(content)},
				{Path: "geo/util.py", Content: proto.String(util)},
			}},
			Cursor:     &infillv1.Cursor{Path: "geo/circle.py", Offset: uint64(off), Encoding: infillv1.PositionEncoding_POSITION_ENCODING_BYTE_OFFSET},
			Generation: &infillv1.GenerationOptions{MaxTokens: 4},
			SessionId:  "circle.py",
		}
		if _, err := c.Complete(context.WithValue(t.Context(), replicaKey{}, replica), req); err != nil {
			t.Fatalf("key %d: %v", step, infill.FormatError(err))
		}
		if _, err := w.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	ref.mu.Lock()
	defer ref.mu.Unlock()
	if len(rec.prompts) != keys || len(ref.prompts) != keys {
		t.Fatalf("%d prompts through the replicas, %d from the reference, for %d keys", len(rec.prompts), len(ref.prompts), keys)
	}
	for i := range keys {
		if rec.prompts[i] != ref.prompts[i] {
			t.Fatalf("key %d: the replicas' prompt differs from the whole content's:\n%q\n%q", i, rec.prompts[i], ref.prompts[i])
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	served := map[string]int{}
	resends := 0
	for i, code := range log.codes[:affinityFrom] {
		switch code {
		case codes.OK:
			served[log.replicas[i]]++
		case codes.FailedPrecondition:
			resends++
		default:
			t.Errorf("call %d to %s: %v", i, log.replicas[i], code)
		}
	}
	for i, s := range log.sessions {
		if want := "infill-go/circle.py"; s != want {
			t.Errorf("call %d carried %s %q, want %q", i, infill.SessionHeader, s, want)
		}
	}
	if served[a.Addr] == 0 || served[b.Addr] == 0 {
		t.Fatalf("answers per replica %v: the client did not alternate", served)
	}
	if resends < alternate-1 {
		t.Errorf("%d FAILED_PRECONDITION in %d alternating keystrokes: each replica should have lacked the other's text", resends, alternate)
	}
	// With affinity only the first call (replica 0 missed key 11's text)
	// may need content resent.
	after := log.codes[affinityFrom:]
	firstOK := slices.Index(after, codes.OK)
	if firstOK < 0 || slices.ContainsFunc(after[firstOK:], func(c codes.Code) bool { return c != codes.OK }) {
		t.Errorf("the affinity phase's calls: %v, want resends only before the first answer", after)
	}
	t.Logf("%d alternating keystrokes: answers per replica %v, %d resends; %d on one replica: %d resends",
		alternate, served, resends, keys-alternate, firstOK)
}
