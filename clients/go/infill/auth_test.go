package infill

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/servertest"
)

// tokenEcho answers every Complete with an empty response.
func tokenEcho() *fakeServer {
	return &fakeServer{unary: func(int, *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
		return &infillv1.CompleteResponse{}, nil
	}}
}

func authHeader(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	return strings.Join(md.Get("authorization"), ",")
}

type authServer struct {
	*fakeServer
	seen chan string
}

func (a authServer) Complete(ctx context.Context, req *infillv1.CompleteRequest) (*infillv1.CompleteResponse, error) {
	a.seen <- authHeader(ctx)
	return a.fakeServer.Complete(ctx, req)
}

func TestTokenOverLoopbackPlaintext(t *testing.T) {
	t.Parallel()
	srv := authServer{tokenEcho(), make(chan string, 1)}
	c, _ := newTestClient(t, srv, Config{Token: "s3cret", AllowTokenWithoutTLS: true})
	if _, err := c.Complete(t.Context(), &infillv1.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := <-srv.seen; got != "Bearer s3cret" {
		t.Errorf("server saw authorization %q", got)
	}
}

func TestTokenOverTLS(t *testing.T) {
	t.Parallel()
	certs := servertest.NewCerts(t)
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := authServer{tokenEcho(), make(chan string, 1)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	infillv1.RegisterCompletionServiceServer(s, srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-served
	})

	c, err := Dial(lis.Addr().String(), Config{
		TLS:   &tls.Config{RootCAs: certs.NoCertTLS().RootCAs, ServerName: "localhost", MinVersion: tls.VersionTLS12},
		Token: "s3cret",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Complete(t.Context(), &infillv1.CompleteRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := <-srv.seen; got != "Bearer s3cret" {
		t.Errorf("server saw authorization %q", got)
	}
}
