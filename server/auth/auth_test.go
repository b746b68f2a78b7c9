package auth_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/infill-dev/infill/server/auth"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable time for expiry and rate tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	file  string
	clock *clock
	guard *auth.Guard
	logs  *observer.ObservedLogs
	// tokens by name
	tok map[string]string
}

// newGuard writes lines (name → the rest of the line after the name) with
// fresh tokens and loads them.
func newGuard(t *testing.T, cfg auth.Config, lines map[string]string) *fixture {
	t.Helper()
	f := &fixture{file: filepath.Join(t.TempDir(), "tokens"), clock: &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		tok: map[string]string{}}
	f.write(t, lines)
	cfg.TokenFile, cfg.Now = f.file, f.clock.now
	core, logs := observer.New(zap.InfoLevel)
	g, err := auth.New(cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	f.guard, f.logs = g, logs
	return f
}

func (f *fixture) write(t *testing.T, lines map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# infill tokens\n\n")
	for name, rest := range lines {
		tok, ok := f.tok[name]
		if !ok {
			tok = auth.NewToken()
			f.tok[name] = tok
		}
		b.WriteString(auth.Line(tok, name, nil, time.Time{}) + " " + rest + "\n")
	}
	if err := os.WriteFile(f.file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAdmit(t *testing.T) {
	f := newGuard(t, auth.Config{}, map[string]string{
		"editor":  "complete",
		"harness": "complete evaluate",
		"old":     "complete expires=2026-03-01T12:00:01Z",
		"dated":   "evaluate expires=2026-03-02",
	})
	g := f.guard
	for _, tc := range []struct {
		name, token string
		scope       auth.Scope
		want        error
		msg         string
	}{
		{"missing", "", auth.ScopeComplete, auth.ErrUnauthenticated, "missing bearer token"},
		{"unknown", auth.NewToken(), auth.ScopeComplete, auth.ErrUnauthenticated, "invalid token"},
		{"a hash is not a token", strings.Fields(auth.Line(f.tok["editor"], "x", nil, time.Time{}))[0], auth.ScopeComplete, auth.ErrUnauthenticated, "invalid token"},
		{"editor completes", f.tok["editor"], auth.ScopeComplete, nil, ""},
		{"editor may not evaluate", f.tok["editor"], auth.ScopeEvaluate, auth.ErrPermissionDenied, `lacks the "evaluate" scope`},
		{"any valid token for no scope", f.tok["editor"], "", nil, ""},
		{"harness evaluates", f.tok["harness"], auth.ScopeEvaluate, nil, ""},
		{"not yet expired", f.tok["old"], auth.ScopeComplete, nil, ""},
		{"a date is its start", f.tok["dated"], auth.ScopeEvaluate, nil, ""},
	} {
		call, err := g.Admit(tc.token, tc.scope)
		if !errors.Is(err, tc.want) || tc.want != nil && !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %v (%q)", tc.name, err, tc.want, tc.msg)
		}
		if err == nil && call.Name == "" {
			t.Errorf("%s: admitted call without its token's name", tc.name)
		}
		call.Done()
	}
	f.clock.add(time.Second)
	if _, err := g.Admit(f.tok["old"], auth.ScopeComplete); !errors.Is(err, auth.ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired token: err = %v", err)
	}
	f.clock.add(12 * time.Hour)
	if _, err := g.Admit(f.tok["dated"], auth.ScopeEvaluate); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("token expired by date: err = %v", err)
	}
	if !g.HasScope(auth.ScopeEvaluate) {
		t.Error("HasScope(evaluate) false with the harness token in force")
	}
}

func TestDisabledAdmitsAll(t *testing.T) {
	g, err := auth.New(auth.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"", "anything"} {
		call, err := g.Admit(tok, auth.ScopeEvaluate)
		if err != nil {
			t.Errorf("Admit(%q) with no token file: %v", tok, err)
		}
		call.Done()
	}
	if g.Enabled() {
		t.Error("enabled without a token file")
	}
	var nilGuard *auth.Guard
	if _, err := nilGuard.Admit("", auth.ScopeComplete); err != nil {
		t.Errorf("nil guard: %v", err)
	}
}

func TestRateLimit(t *testing.T) {
	f := newGuard(t, auth.Config{Rate: 100}, map[string]string{"slow": "complete rate=1 burst=2", "fast": "complete"})
	g, tok := f.guard, f.tok["slow"]
	for i := range 2 {
		call, err := g.Admit(tok, auth.ScopeComplete)
		if err != nil {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
		call.Done()
	}
	_, err := g.Admit(tok, auth.ScopeComplete)
	var le *auth.LimitError
	if !errors.As(err, &le) || le.RetryAfter != time.Second {
		t.Fatalf("third request at once: err = %v, want a LimitError retrying after 1s", err)
	}
	// A refused request takes nothing from the bucket: after the wait it
	// was told, one more passes.
	f.clock.add(le.RetryAfter)
	call, err := g.Admit(tok, auth.ScopeComplete)
	if err != nil {
		t.Fatalf("after RetryAfter: %v", err)
	}
	call.Done()
	// The server's default (100/s, burst 100) applies to a line without rate=.
	for i := range 100 {
		call, err := g.Admit(f.tok["fast"], auth.ScopeComplete)
		if err != nil {
			t.Fatalf("default limit, request %d: %v", i, err)
		}
		call.Done()
	}
	if _, err := g.Admit(f.tok["fast"], auth.ScopeComplete); !errors.As(err, &le) {
		t.Fatalf("default limit exceeded: err = %v", err)
	}
}

func TestStreamLimit(t *testing.T) {
	f := newGuard(t, auth.Config{}, map[string]string{"one": "complete streams=1", "other": "complete"})
	g := f.guard
	first, err := g.Admit(f.tok["one"], auth.ScopeComplete)
	if err != nil {
		t.Fatal(err)
	}
	var le *auth.LimitError
	if _, err := g.Admit(f.tok["one"], auth.ScopeComplete); !errors.As(err, &le) || le.RetryAfter <= 0 {
		t.Fatalf("second call in flight: err = %v, want a LimitError", err)
	}
	if call, err := g.Admit(f.tok["other"], auth.ScopeComplete); err != nil {
		t.Fatalf("another token is not limited by the first's calls: %v", err)
	} else {
		call.Done()
	}
	first.Done()
	first.Done() // twice: released once
	second, err := g.Admit(f.tok["one"], auth.ScopeComplete)
	if err != nil {
		t.Fatalf("after the first ended: %v", err)
	}
	if _, err := g.Admit(f.tok["one"], auth.ScopeComplete); !errors.As(err, &le) {
		t.Fatalf("a double Done released two places: err = %v", err)
	}
	second.Done()
}

func TestReload(t *testing.T) {
	f := newGuard(t, auth.Config{}, map[string]string{"alice": "complete", "bob": "complete streams=1"})
	g := f.guard
	bob, err := g.Admit(f.tok["bob"], auth.ScopeComplete)
	if err != nil {
		t.Fatal(err)
	}
	// Revoke alice; bob's call in flight keeps its place across the reload.
	f.write(t, map[string]string{"bob": "complete streams=1", "carol": "evaluate"})
	if err := g.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Admit(f.tok["alice"], auth.ScopeComplete); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("revoked token: err = %v", err)
	}
	if call, err := g.Admit(f.tok["carol"], auth.ScopeEvaluate); err != nil {
		t.Errorf("added token: %v", err)
	} else {
		call.Done()
	}
	var le *auth.LimitError
	if _, err := g.Admit(f.tok["bob"], auth.ScopeComplete); !errors.As(err, &le) {
		t.Errorf("bob's call in flight forgotten by the reload: err = %v", err)
	}
	bob.Done()

	// A broken file keeps the tokens in force, says why in the log and
	// returns the error.
	if err := os.WriteFile(f.file, []byte("sha256:zz carol evaluate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); err == nil {
		t.Fatal("a broken file reloaded without error")
	}
	if call, err := g.Admit(f.tok["carol"], auth.ScopeEvaluate); err != nil {
		t.Errorf("tokens in force lost to a broken file: %v", err)
	} else {
		call.Done()
	}
	if n := f.logs.FilterMessageSnippet("keeping the tokens in force").Len(); n != 1 {
		t.Errorf("%d log lines about the broken file, want 1", n)
	}
	if err := os.Remove(f.file); err != nil {
		t.Fatal(err)
	}
	if err := g.Reload(); err == nil || len(g.Tokens()) != 2 {
		t.Errorf("missing file: err %v, %d tokens in force (want an error and 2)", err, len(g.Tokens()))
	}
}

func TestParse(t *testing.T) {
	h := strings.Fields(auth.Line("secret", "x", nil, time.Time{}))[0]
	h2 := strings.Fields(auth.Line("other", "x", nil, time.Time{}))[0]
	toks, err := auth.Parse([]byte("# comment\n\n  "+h+" alice complete complete evaluate expires=2027-01-31 rate=2.5 streams=3\n"+
		h2+" bob evaluate burst=0\n"), auth.Config{Rate: 10, Burst: 4})
	if err != nil {
		t.Fatal(err)
	}
	a, b := toks[0], toks[1]
	if a.Name != "alice" || len(a.Scopes) != 2 || !a.Expires.Equal(time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC)) ||
		a.Rate != 2.5 || a.Burst != 4 || a.Streams != 3 {
		t.Errorf("alice = %+v", a)
	}
	if b.Rate != 10 || b.Burst != 10 || b.Streams != 0 || !b.Expires.IsZero() {
		t.Errorf("bob = %+v (want the default rate, burst 0 meaning the rate rounded up)", b)
	}
	for name, line := range map[string]string{
		"short hash":      "sha256:abcd alice complete",
		"no prefix":       strings.TrimPrefix(h, "sha256:") + " alice complete",
		"no scope":        h + " alice",
		"no scope option": h + " alice rate=1",
		"unknown scope":   h + " alice admin",
		"bad name":        h + " al/ice complete",
		"unknown option":  h + " alice complete ttl=5",
		"bad expiry":      h + " alice complete expires=soon",
		"negative rate":   h + " alice complete rate=-1",
		"NaN rate":        h + " alice complete rate=NaN",
		"bad streams":     h + " alice complete streams=x",
		"same name":       h + " alice complete\n" + h2 + " alice complete",
		"same token":      h + " alice complete\n" + h + " bob complete",
		"empty":           "# nothing\n",
	} {
		if _, err := auth.Parse([]byte(line), auth.Config{}); err == nil {
			t.Errorf("%s: parsed %q", name, line)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []auth.Config{{Rate: 1}, {Streams: 1}, {TokenFile: "f", Rate: -1}, {TokenFile: "f", Streams: -1}} {
		if c.Validate() == nil {
			t.Errorf("%+v: valid", c)
		}
	}
	if _, err := auth.New(auth.Config{TokenFile: filepath.Join(t.TempDir(), "none")}, nil); err == nil {
		t.Error("a missing token file at start is not an error")
	}
}

func TestParseBearer(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer abc": "abc", "bearer abc": "abc", "BEARER  abc ": "abc",
		"Bearer ": "", "Bearer": "", "": "", "Basic abc": "", "abc": "",
	} {
		if got := auth.ParseBearer(in); got != want {
			t.Errorf("ParseBearer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewTokenIsRandom(t *testing.T) {
	a, b := auth.NewToken(), auth.NewToken()
	if a == b || len(a) != len("infill_")+43 {
		t.Errorf("tokens %q and %q", a, b)
	}
	line := auth.Line(a, "n", []auth.Scope{auth.ScopeComplete}, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if strings.Contains(line, a) || !strings.HasSuffix(line, " n complete expires=2027-01-01T00:00:00Z") {
		t.Errorf("line %q", line)
	}
}

// Authenticate checks a token as Admit does (the same errors) but takes
// nothing from its limits: a token at its rate and streams limits still
// authenticates, and Admit afterwards still has its burst.
func TestAuthenticateTakesNoLimits(t *testing.T) {
	f := newGuard(t, auth.Config{}, map[string]string{"slow": "complete rate=0.001 burst=1 streams=1", "harness": "evaluate"})
	g := f.guard
	for range 5 {
		if tok, err := g.Authenticate(f.tok["slow"], auth.ScopeComplete); err != nil || tok.Name != "slow" {
			t.Fatalf("Authenticate: %v, %v", tok, err)
		}
	}
	call, err := g.Admit(f.tok["slow"], auth.ScopeComplete)
	if err != nil {
		t.Fatalf("Admit after Authenticate: %v (Authenticate took from the burst)", err)
	}
	if _, err := g.Authenticate(f.tok["slow"], auth.ScopeComplete); err != nil {
		t.Errorf("Authenticate with a call in flight at streams=1: %v", err)
	}
	call.Done()
	for _, tc := range []struct {
		token string
		scope auth.Scope
		want  error
	}{
		{"", auth.ScopeComplete, auth.ErrUnauthenticated},
		{auth.NewToken(), auth.ScopeComplete, auth.ErrUnauthenticated},
		{f.tok["harness"], auth.ScopeComplete, auth.ErrPermissionDenied},
	} {
		if _, err := g.Authenticate(tc.token, tc.scope); !errors.Is(err, tc.want) {
			t.Errorf("Authenticate(%q, %s) = %v, want %v", tc.token, tc.scope, err, tc.want)
		}
	}
	off, err := auth.New(auth.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := off.Authenticate("", auth.ScopeComplete); tok != nil || err != nil {
		t.Errorf("without tokens: %v, %v", tok, err)
	}
}
