package httpapi_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/infill-dev/infill/server/pipeline"
)

// The completion bodies of each surface (the real server's authentication
// is tested end to end in package server).
var surfaceBodies = []struct{ name, path, body string }{
	{"llama.cpp", "/infill", `{"input_prefix":"def f():\n    return ","input_suffix":"\n"}`},
	{"ollama", "/api/generate", `{"prompt":"def f():\n    return ","suffix":"\n","stream":false}`},
	{"openai", "/v1/completions", `{"prompt":"def f():\n    return ","suffix":"\n"}`},
	{"tabby", "/v1/completions", `{"language":"python","segments":{"prefix":"def f():\n    return ","suffix":"\n"}}`},
}

// TestAuthorizationIgnoredWithoutTokens: with no token file (no Guard),
// llama.vim's empty "Bearer " and the token Tabby's agent sends pass.
func TestAuthorizationIgnoredWithoutTokens(t *testing.T) {
	t.Parallel()
	url := startFake(t, &fakePipe{deltas: []string{"1"}})
	for _, s := range surfaceBodies {
		for _, authz := range []string{"Bearer ", "Bearer auth_0123456789abcdef", "Basic eDp5"} {
			req, err := http.NewRequest(http.MethodPost, url+s.path, strings.NewReader(s.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", authz)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s with %q: %d, want 200", s.name, authz, resp.StatusCode)
			}
		}
	}
}

// TestErrorsHideServerPaths: an error that names a server path (here from
// the pipeline) reaches every surface without its directories.
func TestErrorsHideServerPaths(t *testing.T) {
	t.Parallel()
	secret := "/srv/infill/private/repos/acme"
	pathErr := fmt.Errorf("reading the workspace: %w", &fs.PathError{Op: "open", Path: secret + "/main.py", Err: fs.ErrPermission})
	for _, err := range []error{pathErr, fmt.Errorf("%w: %w", pipeline.ErrSuperseded, pathErr)} {
		url := startFake(t, &fakePipe{err: err})
		for _, s := range surfaceBodies {
			r := do(t, http.MethodPost, url+s.path, []byte(s.body))
			if r.status < 400 || strings.Contains(string(r.body), "/srv") {
				t.Errorf("%s: %d %s", s.name, r.status, r.body)
			}
		}
	}
}
