// Package auth owns who may call infill and how much: bearer tokens read
// from a file that holds only their SHA-256 hashes, compared in constant
// time, reloaded on demand (SIGHUP in infill-server) with the previous set
// kept when the new file is broken; each token's scopes (complete,
// evaluate), optional expiry, and per-token limits (requests per second
// with a burst, calls in flight). It knows no transport: the gRPC
// interceptors (package server) and the HTTP middleware (package httpapi)
// hand it the presented token and the scope a call needs; its errors report
// their kinds (internal/errkind), which pipeline.Classify reads.
//
// # Token file
//
// One token a line; blank lines and lines starting with # are ignored:
//
//		sha256:<64 hex digits> NAME SCOPE... [expires=WHEN] [rate=R] [burst=N] [streams=N]
//
//	  - sha256: the SHA-256 of the token's text (what the client sends after
//	    "Bearer "), in hex. The file never holds a token itself;
//	    `infill-server token NAME SCOPE...` makes a new random one and prints
//	    its line.
//	  - NAME names the token in logs and errors: letters, digits and ._@+-,
//	    at most 64, unique in the file.
//	  - SCOPE: complete (CompletionService and every HTTP surface) or evaluate
//	    (EvaluationService); at least one.
//	  - expires: an RFC 3339 time (2027-01-31T18:00:00Z) or a date
//	    (2027-01-31, meaning its start, UTC); from then on the token is
//	    refused as expired.
//	  - rate (requests per second), burst (requests at once before the rate
//	    applies; 0: the rate rounded up) and streams (calls in flight)
//	    override the server's defaults for this token; a rate or streams of
//	    0 means unlimited.
//
// The tokens are hashed without a salt: they are random 256-bit strings
// (what `infill-server token` makes), not passwords, so a hash cannot be
// reversed by guessing. Do not use a human-chosen token.
package auth

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infill-dev/infill/internal/errkind"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
)

// Scope is what a token may call.
type Scope string

// Scopes.
const (
	// ScopeComplete allows completions: CompletionService and the HTTP
	// surfaces.
	ScopeComplete Scope = "complete"
	// ScopeEvaluate allows the EvaluationService (it runs code in the
	// sandbox).
	ScopeEvaluate Scope = "evaluate"
)

var knownScopes = []Scope{ScopeComplete, ScopeEvaluate}

// Errors returned by Guard.Admit; they report their kinds (internal/errkind:
// Unauthenticated, PermissionDenied, and ResourceExhausted for a
// LimitError), which the server maps to status codes.
var (
	// ErrUnauthenticated: no token, an unknown one or an expired one.
	ErrUnauthenticated = errkind.New(errkind.Unauthenticated, "unauthenticated")
	// ErrPermissionDenied: a valid token without the scope the call needs.
	ErrPermissionDenied = errkind.New(errkind.PermissionDenied, "permission denied")
)

// LimitError refuses a call over its token's limits: retry after
// RetryAfter.
type LimitError struct {
	Reason     string
	RetryAfter time.Duration
}

func (e *LimitError) Error() string { return "rate limited: " + e.Reason }

// ErrorKind is ResourceExhausted.
func (e *LimitError) ErrorKind() errkind.Kind { return errkind.ResourceExhausted }

// RetryDelay is RetryAfter.
func (e *LimitError) RetryDelay() time.Duration { return e.RetryAfter }

// Config configures the Guard. Flags are read only in cmd/infill-server.
type Config struct {
	// TokenFile is the token file; empty turns token authentication off.
	TokenFile string
	// Rate is each token's requests per second unless its line says
	// otherwise; 0 is unlimited.
	Rate float64
	// Burst is how many requests a token may make at once above Rate; 0
	// means Rate rounded up (at least 1).
	Burst int
	// Streams bounds each token's calls in flight (unary calls, streams
	// and HTTP requests alike) unless its line says otherwise; 0 is
	// unlimited.
	Streams int
	// Now is the clock; nil is time.Now.
	Now func() time.Time `json:"-"`
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Burst < 0 || c.Streams < 0 {
		errs = append(errs, errors.New("auth: rate, burst and streams must be >= 0"))
	}
	if c.TokenFile == "" && (c.Rate > 0 || c.Burst > 0 || c.Streams > 0) {
		errs = append(errs, errors.New("auth: per-token limits need a token file (--auth-tokens)"))
	}
	return errors.Join(errs...)
}

// Token is one line of the token file.
type Token struct {
	Name    string
	Scopes  []Scope
	Expires time.Time // zero: never
	// Rate, Burst and Streams are the token's limits with the server's
	// defaults applied (0: unlimited).
	Rate    float64
	Burst   int
	Streams int
	hash    [sha256.Size]byte
}

// Has reports whether t allows scope s.
func (t *Token) Has(s Scope) bool { return slices.Contains(t.Scopes, s) }

// Guard checks tokens and applies their limits. It is safe for concurrent
// use; a nil or disabled Guard admits everyone.
type Guard struct {
	cfg    Config
	log    *zap.Logger
	tokens atomic.Pointer[[]*Token]

	mu    sync.Mutex
	usage map[string]*usage // by token name; kept across reloads
}

// usage is a token's limiter and its calls in flight.
type usage struct {
	lim    *rate.Limiter
	active int
}

// New returns a Guard reading cfg.TokenFile; with none it admits every
// call. A token file that cannot be read or parsed is an error.
func New(cfg Config, log *zap.Logger) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = zap.NewNop()
	}
	g := &Guard{cfg: cfg, log: log, usage: map[string]*usage{}}
	if cfg.TokenFile == "" {
		return g, nil
	}
	toks, err := g.load()
	if err != nil {
		return nil, err
	}
	g.tokens.Store(&toks)
	log.Info("auth: tokens loaded", zap.String("file", cfg.TokenFile), zap.Int("tokens", len(toks)))
	return g, nil
}

// Enabled reports whether calls need a token.
func (g *Guard) Enabled() bool { return g != nil && g.cfg.TokenFile != "" }

// Tokens returns the tokens in force.
func (g *Guard) Tokens() []*Token {
	if !g.Enabled() {
		return nil
	}
	return *g.tokens.Load()
}

// HasScope reports whether a token in force (not expired) allows s.
func (g *Guard) HasScope(s Scope) bool {
	now := g.now()
	for _, t := range g.Tokens() {
		if t.Has(s) && !t.expired(now) {
			return true
		}
	}
	return false
}

// Reload reads the token file again. When it cannot be read or parsed the
// tokens in force stay, the error is logged and returned. Calls in flight
// keep running; a removed token's next call is refused.
func (g *Guard) Reload() error {
	if !g.Enabled() {
		return nil
	}
	toks, err := g.load()
	if err != nil {
		g.log.Error("auth: token file not reloaded, keeping the tokens in force", zap.String("file", g.cfg.TokenFile),
			zap.Int("tokens", len(g.Tokens())), zap.Error(err))
		return err
	}
	g.tokens.Store(&toks)
	g.mu.Lock()
	for name, u := range g.usage {
		if u.active == 0 && !slices.ContainsFunc(toks, func(t *Token) bool { return t.Name == name }) {
			delete(g.usage, name)
		}
	}
	g.mu.Unlock()
	g.log.Info("auth: tokens reloaded", zap.String("file", g.cfg.TokenFile), zap.Int("tokens", len(toks)))
	return nil
}

// Call is an admitted call; Done ends it. A nil Call (authentication off)
// is valid.
type Call struct {
	// Name is the token's name.
	Name string
	g    *Guard
	u    *usage
	once sync.Once
}

// Done releases the call's place among its token's calls in flight.
func (c *Call) Done() {
	if c == nil || c.u == nil {
		return
	}
	c.once.Do(func() {
		c.g.mu.Lock()
		c.u.active--
		c.g.mu.Unlock()
	})
}

// Admit checks token (the text after "Bearer "; empty when none came) for
// scope and the token's limits. An empty scope needs only a valid token.
// The caller calls Done on the returned Call when the call ends.
func (g *Guard) Admit(token string, scope Scope) (*Call, error) {
	if !g.Enabled() {
		return nil, nil
	}
	t, err := g.Authenticate(token, scope)
	if err != nil {
		return nil, err
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.usage[t.Name]
	if u == nil {
		u = &usage{}
		g.usage[t.Name] = u
	}
	if t.Streams > 0 && u.active >= t.Streams {
		return nil, &LimitError{Reason: fmt.Sprintf("token %q already has %d calls in flight", t.Name, u.active), RetryAfter: time.Second}
	}
	if t.Rate > 0 {
		if u.lim == nil {
			u.lim = rate.NewLimiter(rate.Limit(t.Rate), t.Burst)
		} else if u.lim.Limit() != rate.Limit(t.Rate) || u.lim.Burst() != t.Burst { // changed by a reload
			u.lim.SetLimitAt(now, rate.Limit(t.Rate))
			u.lim.SetBurstAt(now, t.Burst)
		}
		r := u.lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			return nil, &LimitError{Reason: fmt.Sprintf("token %q is over %g requests/s (burst %d)", t.Name, t.Rate, t.Burst), RetryAfter: d}
		}
	}
	u.active++
	return &Call{Name: t.Name, g: g, u: u}, nil
}

// Authenticate checks token and scope as Admit does, without the
// token's limits (a call that does no work, such as a health check that
// shows a client whether its token is good): the token in force, or
// ErrUnauthenticated or ErrPermissionDenied. With authentication off it
// returns nil, nil.
func (g *Guard) Authenticate(token string, scope Scope) (*Token, error) {
	if !g.Enabled() {
		return nil, nil
	}
	if token == "" {
		return nil, fmt.Errorf("%w: missing bearer token (send \"authorization: Bearer TOKEN\")", ErrUnauthenticated)
	}
	t := g.find(token)
	if t == nil {
		return nil, fmt.Errorf("%w: invalid token", ErrUnauthenticated)
	}
	if t.expired(g.now()) {
		return nil, fmt.Errorf("%w: token %q expired at %s", ErrUnauthenticated, t.Name, t.Expires.UTC().Format(time.RFC3339))
	}
	if scope != "" && !t.Has(scope) {
		return nil, fmt.Errorf("%w: token %q lacks the %q scope", ErrPermissionDenied, t.Name, scope)
	}
	return t, nil
}

// find returns the token whose hash matches token's. Every hash is
// compared, in constant time, whichever matches.
func (g *Guard) find(token string) *Token {
	h := sha256.Sum256([]byte(token))
	var found *Token
	for _, t := range g.Tokens() {
		if subtle.ConstantTimeCompare(h[:], t.hash[:]) == 1 {
			found = t
		}
	}
	return found
}

func (g *Guard) now() time.Time {
	if g == nil || g.cfg.Now == nil {
		return time.Now()
	}
	return g.cfg.Now()
}

func (t *Token) expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// ParseBearer returns the token of an Authorization header value ("Bearer
// TOKEN", the scheme in any case). Another scheme, or none, gives "".
func ParseBearer(header string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

func (g *Guard) load() ([]*Token, error) {
	data, err := os.ReadFile(g.cfg.TokenFile)
	if err != nil {
		return nil, err
	}
	return Parse(data, g.cfg)
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9._@+-]{1,64}$`)

// Parse reads a token file's text (see the package documentation), with
// the limits cfg gives by default.
func Parse(data []byte, cfg Config) ([]*Token, error) {
	var toks []*Token
	names := map[string]int{}
	hashes := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		t, err := parseLine(line, cfg)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, ok := names[t.Name]; ok {
			return nil, fmt.Errorf("line %d: name %q is already on line %d", n, t.Name, prev)
		}
		if prev, ok := hashes[t.hash]; ok {
			return nil, fmt.Errorf("line %d: the same token is already on line %d", n, prev)
		}
		names[t.Name], hashes[t.hash] = n, n
		toks = append(toks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("no tokens: every call would be refused (add a line, or run without --auth-tokens)")
	}
	return toks, nil
}

func parseLine(line string, cfg Config) (*Token, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return nil, errors.New("want sha256:HEX NAME SCOPE... [expires=WHEN] [rate=R] [burst=N] [streams=N]")
	}
	hx, ok := strings.CutPrefix(f[0], "sha256:")
	raw, err := hex.DecodeString(hx)
	if !ok || err != nil || len(raw) != sha256.Size {
		return nil, errors.New("the first field must be sha256: and 64 hex digits")
	}
	if !namePattern.MatchString(f[1]) {
		return nil, fmt.Errorf("name %q: want 1 to 64 of A-Z a-z 0-9 . _ @ + -", f[1])
	}
	t := &Token{Name: f[1], Rate: cfg.Rate, Burst: cfg.Burst, Streams: cfg.Streams}
	copy(t.hash[:], raw)
	for _, field := range f[2:] {
		k, v, isOpt := strings.Cut(field, "=")
		if !isOpt {
			s := Scope(field)
			if !slices.Contains(knownScopes, s) {
				return nil, fmt.Errorf("unknown scope %q (known: complete, evaluate)", field)
			}
			if !t.Has(s) {
				t.Scopes = append(t.Scopes, s)
			}
			continue
		}
		var err error
		switch k {
		case "expires":
			t.Expires, err = ParseExpiry(v)
		case "rate":
			t.Rate, err = strconv.ParseFloat(v, 64)
			if err == nil && (t.Rate < 0 || math.IsNaN(t.Rate) || math.IsInf(t.Rate, 0)) {
				err = errors.New("must be a number >= 0")
			}
		case "burst":
			t.Burst, err = nonNegative(v)
		case "streams":
			t.Streams, err = nonNegative(v)
		default:
			err = errors.New("unknown option (known: expires, rate, burst, streams)")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	if len(t.Scopes) == 0 {
		return nil, fmt.Errorf("token %q has no scope (complete, evaluate)", t.Name)
	}
	if t.Rate > 0 && t.Burst == 0 {
		t.Burst = max(1, int(math.Ceil(t.Rate)))
	}
	return t, nil
}

func nonNegative(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err == nil && n < 0 {
		err = errors.New("must be >= 0")
	}
	return n, err
}

// ParseExpiry reads an expiry: an RFC 3339 time or a date (its start,
// UTC).
func ParseExpiry(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return time.Time{}, errors.New("want an RFC 3339 time (2027-01-31T18:00:00Z) or a date (2027-01-31)")
	}
	return t, nil
}

// NewToken returns a new random token: "infill_" and 256 random bits.
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "infill_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Line returns the token file line of token: its hash, name, scopes and,
// when not zero, its expiry.
func Line(token, name string, scopes []Scope, expires time.Time) string {
	h := sha256.Sum256([]byte(token))
	var b strings.Builder
	b.WriteString("sha256:" + hex.EncodeToString(h[:]) + " " + name)
	for _, s := range scopes {
		b.WriteString(" " + string(s))
	}
	if !expires.IsZero() {
		b.WriteString(" expires=" + expires.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// ParseScope checks a scope's name.
func ParseScope(s string) (Scope, error) {
	if !slices.Contains(knownScopes, Scope(s)) {
		return "", fmt.Errorf("unknown scope %q (known: complete, evaluate)", s)
	}
	return Scope(s), nil
}

// ValidName reports whether name can name a token.
func ValidName(name string) bool { return namePattern.MatchString(name) }
