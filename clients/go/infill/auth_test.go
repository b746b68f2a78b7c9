package infill

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
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
	cert, pool := selfSigned(t)
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
		TLS:   &tls.Config{RootCAs: pool, ServerName: "localhost", MinVersion: tls.VersionTLS12},
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

// selfSigned makes a certificate for "localhost" and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true,

		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
