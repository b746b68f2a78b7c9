package infill

import (
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// DefaultMaxMessageBytes is the default send and receive limit, matching the
// server's default receive limit of 64 MiB.
const DefaultMaxMessageBytes = 64 << 20

// DefaultDigestCacheSize is the default number of content digests a client
// remembers as held by the server.
const DefaultDigestCacheSize = 100_000

// Config configures a Client. The zero value of every field means its
// default; DefaultConfig shows them.
type Config struct {
	// TLS enables TLS with this configuration; nil means plaintext.
	TLS *tls.Config
	// Token, when set, is sent as "authorization: Bearer TOKEN" on every
	// call (gRPC per-RPC credentials).
	Token string
	// AllowTokenWithoutTLS permits sending Token over plaintext, which is
	// only sensible on loopback or a Unix socket.
	AllowTokenWithoutTLS bool
	// Keepalive sets client pings. Default: a ping after 1 minute without
	// activity while a call is open, 20 s to answer. The server's keepalive
	// enforcement policy must allow pings this often.
	Keepalive keepalive.ClientParameters
	// MaxMessageBytes limits sent and received messages. Default 64 MiB.
	MaxMessageBytes int
	// Retry says how UNAVAILABLE is retried.
	Retry RetryPolicy
	// Transfer says how a request's repository travels. The default,
	// TransferDeltas, sends what changed since the server last named the
	// file list, and content the server holds as digests.
	Transfer Transfer
	// DigestCacheSize bounds how many digests are remembered (default
	// 100,000); when full, the memory is cleared and content is sent again.
	DigestCacheSize int
	// ClientID fills CompleteRequest.client_id when a request leaves it
	// empty. Default "infill-go".
	ClientID string
	// DialOptions are appended to the client's own dial options.
	DialOptions []grpc.DialOption
}

// Transfer is how a client sends a request's repository.
type Transfer int

const (
	// TransferDeltas (the default): once a response has named a
	// repository's file list (repository_snapshot), the next request for
	// that repository name sends only the files that changed since, on
	// that base (Repository.base and removed), content this client
	// already sent as its digest, and the cursor file as an edit to its
	// last text the server accepted (File.edits). When the server no
	// longer holds the base or the content, the client sends the whole
	// list or the content again. Requests that set base themselves are
	// sent as they are.
	TransferDeltas Transfer = iota
	// TransferDigests sends the whole file list every time, with content
	// this client already sent as its digest and the cursor file as an
	// edit.
	TransferDigests
	// TransferWhole sends requests as they are: every file with its
	// content, or whatever the caller put there.
	TransferWhole
)

// snapshots and digests say what the mode uses.
func (t Transfer) snapshots() bool { return t == TransferDeltas }
func (t Transfer) digests() bool   { return t == TransferDeltas || t == TransferDigests }

// RetryPolicy configures retries of UNAVAILABLE before the first token.
// The n-th retry waits InitialBackoff·Multiplierⁿ⁻¹, capped at MaxBackoff,
// spread by ±Jitter of itself.
type RetryPolicy struct {
	// MaxAttempts counts all attempts, the first included. Default 4;
	// 1 disables retries.
	MaxAttempts int
	// InitialBackoff is the wait before the first retry. Default 100 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps the wait. Default 3 s.
	MaxBackoff time.Duration
	// Multiplier grows the wait per retry; at least 1. Default 2.
	Multiplier float64
	// Jitter is the fraction of the wait drawn at random, in [0, 1].
	// Default 0.2.
	Jitter float64
}

// DefaultConfig returns the configuration the zero Config stands for.
func DefaultConfig() Config {
	return Config{}.withDefaults()
}

func (c Config) withDefaults() Config {
	if c.Keepalive.Time == 0 {
		c.Keepalive.Time = time.Minute
	}
	if c.Keepalive.Timeout == 0 {
		c.Keepalive.Timeout = 20 * time.Second
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.DigestCacheSize == 0 {
		c.DigestCacheSize = DefaultDigestCacheSize
	}
	if c.ClientID == "" {
		c.ClientID = "infill-go"
	}
	c.Retry = c.Retry.withDefaults()
	return c
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 4
	}
	// A default bound gives way to the other, set bound.
	if p.InitialBackoff == 0 {
		p.InitialBackoff = 100 * time.Millisecond
		if p.MaxBackoff > 0 {
			p.InitialBackoff = min(p.InitialBackoff, p.MaxBackoff)
		}
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(3*time.Second, p.InitialBackoff)
	}
	if p.Multiplier == 0 {
		p.Multiplier = 2
	}
	if p.Jitter == 0 {
		p.Jitter = 0.2
	}
	return p
}

// maxClientIDBytes is the server's bound on client_id.
const maxClientIDBytes = 256

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("invalid client config")

// Validate reports a configuration that cannot work. Zero values are valid
// (they mean defaults).
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	// With DialOptions the caller may have set transport credentials
	// there; the token itself still refuses a plaintext connection at the
	// first call (gRPC's RequireTransportSecurity).
	if c.Token != "" && c.TLS == nil && !c.AllowTokenWithoutTLS && len(c.DialOptions) == 0 {
		return bad("a token needs TLS (or AllowTokenWithoutTLS for loopback)")
	}
	if len(c.ClientID) > maxClientIDBytes {
		return bad("ClientID is %d bytes; the server takes at most %d", len(c.ClientID), maxClientIDBytes)
	}
	if c.Keepalive.Time < 0 || c.Keepalive.Timeout < 0 {
		return bad("keepalive durations must not be negative")
	}
	if c.MaxMessageBytes < 0 {
		return bad("MaxMessageBytes %d must not be negative", c.MaxMessageBytes)
	}
	if c.Transfer < TransferDeltas || c.Transfer > TransferWhole {
		return bad("Transfer %d is not a known mode", c.Transfer)
	}
	if c.DigestCacheSize < 0 {
		return bad("DigestCacheSize %d must not be negative", c.DigestCacheSize)
	}
	p := c.Retry
	switch {
	case p.MaxAttempts < 0:
		return bad("Retry.MaxAttempts %d must not be negative", p.MaxAttempts)
	case p.InitialBackoff < 0 || p.MaxBackoff < 0:
		return bad("Retry backoffs must not be negative")
	case p.Multiplier != 0 && !(p.Multiplier >= 1 && !math.IsInf(p.Multiplier, 1)): // NaN fails too
		return bad("Retry.Multiplier %g must be at least 1 and finite", p.Multiplier)
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return bad("Retry.Jitter %g must be in [0, 1]", p.Jitter)
	}
	d := p.withDefaults()
	if d.MaxBackoff < d.InitialBackoff {
		return bad("Retry.MaxBackoff %v is below InitialBackoff %v", d.MaxBackoff, d.InitialBackoff)
	}
	return nil
}
