package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPullAnswers: what pull makes of the answers a real Ollama cannot be
// made to give in a test (scripts/pull_test.go and setup_test.go pull
// through a real one: a registry of the test's own, and offline): a pull
// that stalls, an answer that ends without success, an error status, and
// the progress lines, shown at most every 10 s and always the first.
func TestPullAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request, flush func())
		code   int
		stdout string
		stderr []string
	}{
		{name: "success", answer: func(w http.ResponseWriter, r *http.Request, flush func()) {
			fmt.Fprintln(w, `{"status":"pulling manifest"}`)
			fmt.Fprintln(w, `{"status":"pulling abc","digest":"sha256:abc","total":2000000,"completed":1000000}`)
			fmt.Fprintln(w, `{"status":"success"}`)
		}, stderr: []string{"p: pulling m: pulling manifest\n", "p: pulled m into the Ollama at "}},
		{name: "error in the stream", answer: func(w http.ResponseWriter, r *http.Request, flush func()) {
			fmt.Fprintln(w, `{"status":"pulling manifest"}`)
			fmt.Fprintln(w, `{"error":"pull model manifest: file does not exist"}`)
		}, code: 1, stdout: "pull model manifest: file does not exist\n",
			stderr: []string{"p: pulling m: pulling manifest", "failed: pull model manifest: file does not exist"}},
		{name: "error status", answer: func(w http.ResponseWriter, r *http.Request, flush func()) {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, `{"error":"disk full"}`)
		}, code: 1, stdout: "disk full\n", stderr: []string{"failed: disk full"}},
		{name: "ends without success", answer: func(w http.ResponseWriter, r *http.Request, flush func()) {
			fmt.Fprintln(w, `{"status":"verifying sha256 digest"}`)
		}, code: 1, stdout: "the answer ended without success (last: verifying sha256 digest)\n"},
		{name: "stalls", answer: func(w http.ResponseWriter, r *http.Request, flush func()) {
			fmt.Fprintln(w, `{"status":"pulling manifest"}`)
			flush()
			select { // until the client gives up
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, code: 1, stdout: "no progress for 1s\n", stderr: []string{"failed: no progress for 1s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/pull" || r.Method != http.MethodPost {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/x-ndjson")
				c.answer(w, r, func() { w.(http.Flusher).Flush() })
			}))
			t.Cleanup(srv.Close)
			var stdout, stderr strings.Builder
			cl := &cli{prefix: "p", stdout: &stdout, stderr: &stderr}
			code := cl.pull(context.Background(), srv.URL, "m", time.Second)
			if code != c.code || stdout.String() != c.stdout {
				t.Errorf("pull: exit %d, stdout %q; want %d, %q (stderr %q)", code, stdout.String(), c.code, c.stdout, stderr.String())
			}
			for _, want := range c.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q does not say %q", stderr.String(), want)
				}
			}
			// Within 10 s only the first progress line is shown.
			if n := strings.Count(stderr.String(), "p: pulling m: "); n > 1 {
				t.Errorf("%d progress lines within 10 s:\n%s", n, stderr.String())
			}
		})
	}
}

// TestPullNoAnswer: nothing listens at the URL: the reason names the
// connection failure.
func TestPullNoAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	var stdout, stderr strings.Builder
	cl := &cli{prefix: "p", stdout: &stdout, stderr: &stderr}
	if code := cl.pull(context.Background(), u, "m", time.Minute); code != 1 || !strings.Contains(stdout.String(), "connection refused") {
		t.Errorf("pull: exit %d, stdout %q; want 1 and the connection refused", code, stdout.String())
	}
}
