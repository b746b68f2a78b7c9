package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// floorResult is the cost of the gRPC hop alone: the same request sent to
// a CompletionService that does nothing but wait (in its own process, same
// grpc-go and message limits as infill-server). Its gap (client latency
// minus the handler's own time) is what any gRPC server pays on this
// machine before doing any work; infill's overhead over a direct Ollama
// request includes it.
type floorResult struct {
	Payload      string  `json:"payload"`
	Variant      string  `json:"variant"`
	N            int     `json:"n"`
	RequestBytes int     `json:"request_bytes"`
	DelayMs      float64 `json:"delay_ms"`
	Rounds       int     `json:"rounds"`
	GapP50Ms     float64 `json:"gap_p50_ms"`
	GapP90Ms     float64 `json:"gap_p90_ms"`
	// Turns is how many requests were sent in turns with this one (1:
	// alone, as runs before the turns were introduced did).
	Turns int `json:"turns,omitempty"`
	// Gaps are per call, in ms.
	Gaps []float64 `json:"gaps_ms,omitempty"`
}

// floorSpec is one request the floor measures: PAYLOAD:VARIANT:OUT.
type floorSpec struct {
	req *infillv1.CompleteRequest
	res floorResult
	out string
}

// floorCmd sends each request of its specs to one no-op server, in turns:
// round i sends every spec once, starting from spec i mod len, so that a
// disturbance on the shared machine falls on all payloads alike instead
// of on whichever block was running.
func floorCmd(args []string) error {
	fl := flag.NewFlagSet("floor", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: benchtool floor [flags] PAYLOAD:VARIANT:OUT...\n"+
			"  PAYLOAD is a full payload file from `benchtool payload` (nN-full.json), VARIANT is full,\n"+
			"  digest or snapshot (the cursor file on a base), OUT the result JSON file")
		fl.PrintDefaults()
	}
	rounds := fl.Int("rounds", 100, "measured calls per spec")
	delay := fl.Duration("delay", 100*time.Millisecond, "how long the no-op handler waits (like a backend)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() == 0 || *rounds < 1 {
		return errors.New("at least one PAYLOAD:VARIANT:OUT and -rounds >= 1 are required")
	}
	var specs []*floorSpec
	for _, arg := range fl.Args() {
		payload, rest, ok1 := strings.Cut(arg, ":")
		variant, out, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || payload == "" || out == "" {
			return fmt.Errorf("%q is not PAYLOAD:VARIANT:OUT", arg)
		}
		full, err := readPayload(payload)
		if err != nil {
			return err
		}
		req := full
		switch variant {
		case "full":
		case "digest":
			req = digestVariant(full)
		case "snapshot":
			req = snapshotVariant(full, "snap:"+strings.Repeat("0", 64))
		default:
			return fmt.Errorf("variant %q is not full, digest or snapshot", variant)
		}
		specs = append(specs, &floorSpec{req: req, out: out, res: floorResult{Payload: payload, Variant: variant,
			N: len(full.GetRepository().GetFiles()), RequestBytes: proto.Size(req), DelayMs: ms(*delay), Rounds: *rounds}})
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "floor-server", "-delay", delay.String())
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("floor-server did not report its address: %w", err)
	}
	conn, err := grpc.NewClient(strings.TrimSpace(addr), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20),
			grpc.ForceCodecV2(infillv1.Codec())))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := infillv1.NewCompletionServiceClient(conn)
	for i := -3; i < *rounds; i++ { // three warm-up rounds
		for k := range specs {
			sp := specs[(max(i, 0)+k)%len(specs)]
			start := time.Now()
			resp, err := client.Complete(context.Background(), sp.req)
			if err != nil {
				return err
			}
			gap := time.Since(start) - resp.GetTimings().GetTotal().AsDuration()
			if i >= 0 {
				sp.res.Gaps = append(sp.res.Gaps, ms(gap))
			}
		}
	}
	for _, sp := range specs {
		sp.res.Turns = len(specs)
		d := describe(sp.res.Gaps)
		sp.res.GapP50Ms, sp.res.GapP90Ms = d.p50, d.p90
		b, err := json.MarshalIndent(sp.res, "", " ")
		if err != nil {
			return err
		}
		fmt.Printf("floor %s n%d-%s (%d bytes): gap p50 %.2f ms, p90 %.2f ms\n", sp.res.Payload, sp.res.N, sp.res.Variant, sp.res.RequestBytes, d.p50, d.p90)
		if err := writeFileAtomic(sp.out, append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// floorServer is a CompletionService that waits and answers with a short
// text, reporting its handler time in Timings.Total.
type floorServer struct {
	infillv1.UnimplementedCompletionServiceServer
	delay time.Duration
}

func (f floorServer) Complete(ctx context.Context, _ *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
	start := time.Now()
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &infillv1.CompleteResponse{
		Candidates: []*infillv1.Candidate{{Text: "if err != nil {\n\t\treturn nil, err\n\t}\n", FinishReason: infillv1.FinishReason_FINISH_REASON_STOP}},
		Timings:    &infillv1.Timings{Total: durationpb.New(time.Since(start))},
	}, nil
}

func floorServerCmd(args []string) error {
	fl := flag.NewFlagSet("floor-server", flag.ContinueOnError)
	delay := fl.Duration("delay", 100*time.Millisecond, "handler wait")
	if err := fl.Parse(args); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The message limits (server.DefaultConfig) and codec infill-server uses.
	s := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20), grpc.ForceServerCodecV2(infillv1.Codec()))
	infillv1.RegisterCompletionServiceServer(s, floorServer{delay: *delay})
	fmt.Println(lis.Addr().String())
	return s.Serve(lis) // until the parent kills it
}
