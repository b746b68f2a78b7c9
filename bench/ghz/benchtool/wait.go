package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// waitCmd polls grpc.health.v1 until the server reports SERVING (infill
// does once its backend answers) or the timeout passes.
func waitCmd(args []string) error {
	fl := flag.NewFlagSet("wait", flag.ContinueOnError)
	addr := fl.String("infill", "", "gRPC address (host:port)")
	timeout := fl.Duration("timeout", time.Minute, "give up after this long")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *addr == "" {
		return errors.New("-infill is required")
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(*timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = resp.GetStatus().String()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s not SERVING after %v: %s", *addr, *timeout, last)
}
