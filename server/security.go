package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	infillv1 "github.com/infill-dev/infill/proto/infill/v1"
	"github.com/infill-dev/infill/server/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TLSConfig configures TLS on the gRPC and HTTP listeners.
type TLSConfig struct {
	// CertFile and KeyFile are the server's PEM certificate (chain) and
	// key; empty serves plaintext.
	CertFile, KeyFile string
	// ClientCAFile, when set, turns on mutual TLS: every client must
	// present a certificate signed by one of these PEM CAs.
	ClientCAFile string
}

func (c TLSConfig) validate() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("server: --tls-cert and --tls-key go together")
	}
	if c.ClientCAFile != "" && c.CertFile == "" {
		return errors.New("server: --tls-client-ca needs --tls-cert and --tls-key")
	}
	return nil
}

// load reads the certificates; nil when TLS is off.
func (c TLSConfig) load() (*tls.Config, error) {
	if c.CertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server: TLS certificate: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("server: TLS client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server: TLS client CA %s: no PEM certificate in it", c.ClientCAFile)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// EvalMode switches the EvaluationService, which runs code sent by clients
// in the sandbox.
type EvalMode string

// Evaluation modes.
const (
	// EvalAuto serves evaluation on a loopback gRPC listener, or where
	// tokens are configured (then only tokens with the evaluate scope may
	// call it: with none, nobody can); otherwise it is off.
	EvalAuto EvalMode = "auto"
	EvalOn   EvalMode = "on"
	EvalOff  EvalMode = "off"
)

// evaluationOff says why the EvaluationService is off; "" when it is on.
func (c Config) evaluationOff() string {
	switch c.Evaluation {
	case EvalOn:
		return ""
	case EvalOff:
		return "the evaluation service is off on this server (--evaluation=off)"
	}
	if IsLoopback(c.ListenAddr) || c.Auth.TokenFile != "" {
		return ""
	}
	return "the evaluation service is off on this server: it listens beyond loopback without tokens " +
		"(--evaluation=auto; configure --auth-tokens with a token allowed to evaluate, or --evaluation=on)"
}

// Authenticated reports whether callers must prove who they are (a token,
// or a client certificate).
func (c Config) Authenticated() bool { return c.Auth.TokenFile != "" || c.TLS.ClientCAFile != "" }

// CheckListen refuses addr, the address of the listener named name (its
// flag), when other machines can reach it (it is not loopback) and
// nothing authenticates callers, unless insecure says so. Every listener
// of infill-server is checked with it.
func CheckListen(name, addr string, authenticated, insecure bool) error {
	if addr == "" || authenticated || insecure || IsLoopback(addr) {
		return nil
	}
	return fmt.Errorf("%s %s is not a loopback address and the server has no authentication: anyone who can reach it "+
		"could use it (and run code through the evaluation service); configure --auth-tokens or --tls-client-ca, "+
		"listen on 127.0.0.1, or pass --insecure to serve it anyway", name, addr)
}

// IsLoopback reports whether the listen address addr (host:port) accepts
// connections from this machine only: 127.0.0.0/8, ::1 or localhost. An
// empty host, 0.0.0.0 and :: listen on every interface; other host names
// are not resolved and count as reachable.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// methodScope is the scope a gRPC method needs; open methods (health)
// need no token. Any other service (reflection) needs a valid token of
// any scope.
func methodScope(method string) (scope auth.Scope, open bool) {
	switch {
	case strings.HasPrefix(method, "/grpc.health.v1.Health/"):
		return "", true
	case strings.HasPrefix(method, "/"+infillv1.CompletionService_ServiceDesc.ServiceName+"/"):
		return auth.ScopeComplete, false
	case strings.HasPrefix(method, "/"+infillv1.EvaluationService_ServiceDesc.ServiceName+"/"):
		return auth.ScopeEvaluate, false
	}
	return "", false
}

// admit checks a gRPC call's bearer token ("authorization" metadata)
// against the method's scope and the token's limits.
func (s *Server) admit(ctx context.Context, method string) (*auth.Call, error) {
	scope, open := methodScope(method)
	if open {
		return nil, nil
	}
	var token string
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get("authorization"); len(v) > 0 {
			token = auth.ParseBearer(v[0])
		}
	}
	call, err := s.guard.Admit(token, scope)
	if err != nil {
		return nil, toStatus(ctx, s.log, err)
	}
	if ri, ok := ctx.Value(rpcInfoKey{}).(*rpcInfo); ok && call != nil {
		ri.token.Store(call.Name)
	}
	return call, nil
}

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	call, err := s.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	defer call.Done()
	return h(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	call, err := s.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	defer call.Done()
	return h(srv, ss)
}

// ReloadTokens reads the token file again (infill-server does on SIGHUP);
// when it is broken the tokens in force stay and the error is returned.
func (s *Server) ReloadTokens() error { return s.guard.Reload() }

// evaluationDisabled answers every EvaluationService call UNIMPLEMENTED
// with why the service is off.
type evaluationDisabled struct {
	infillv1.UnimplementedEvaluationServiceServer
	why string
}

func (e evaluationDisabled) ListBenchmarks(context.Context, *infillv1.ListBenchmarksRequest) (*infillv1.ListBenchmarksResponse, error) {
	return nil, status.Error(codes.Unimplemented, e.why)
}

func (e evaluationDisabled) Evaluate(infillv1.EvaluationService_EvaluateServer) error {
	return status.Error(codes.Unimplemented, e.why)
}

func (e evaluationDisabled) RunBenchmark(*infillv1.RunBenchmarkRequest, infillv1.EvaluationService_RunBenchmarkServer) error {
	return status.Error(codes.Unimplemented, e.why)
}
