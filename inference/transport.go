package inference

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
)

// newClients returns the HTTP clients of a backend: gen for generations
// (no header timeout: the watchdog's first-token bound, which grows with
// the prompt, is the header timeout there, since Ollama sends a
// generation's headers with its first token), cold for every other call
// (with cfg's header timeout). Both send cfg.Token as a bearer token.
func newClients(cfg Config) (gen, cold *http.Client) {
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	gen = &http.Client{Transport: withToken(&http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}, cfg.Token)}
	cold = &http.Client{Transport: withToken(&http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Watchdog.ResponseHeaderTimeout,
	}, cfg.Token)}
	return gen, cold
}

// withToken adds "Authorization: Bearer token" to every request of rt
// (rt itself when token is empty).
func withToken(rt http.RoundTripper, token string) http.RoundTripper {
	if token == "" {
		return rt
	}
	return bearer{rt: rt, header: "Bearer " + token}
}

type bearer struct {
	rt     http.RoundTripper
	header string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	r.Header.Set("Authorization", b.header)
	return b.rt.RoundTrip(r)
}

// markRetryable lets net/http send a generation again on a new
// connection when the kept-alive one it used turns out to have been closed
// by the backend before any answer (a backend killed or restarted between
// two requests closes its idle connections, and a request can be written
// to one before the client notices). net/http does that only for requests
// it may repeat: a POST needs an idempotency key. A generation is safe to
// repeat (it changes nothing but the backend's prompt cache); the new
// connection's dial then fails as ErrNotSent when nobody listens, and the
// request goes to another backend instead of failing.
func markRetryable(r *http.Request) {
	r.Header.Set("X-Idempotency-Key", strconv.FormatUint(retryKeys.Add(1), 36))
}

var retryKeys atomic.Uint64

// statusError reads a failed response's error: Ollama's {"error": "..."},
// OpenAI's {"error": {"message": ...}}, vLLM's older {"message": ...},
// or the body as text.
func statusError(resp *http.Response) api.StatusError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(body))
	if m := errorMessage(bytes.TrimSpace(body)); m != "" {
		msg = m
	}
	return api.StatusError{StatusCode: resp.StatusCode, Status: resp.Status, ErrorMessage: msg}
}

// errorMessage is the message of a JSON error body or event (see
// statusError); "" when b holds none.
func errorMessage(b []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(b, &e) != nil {
		return ""
	}
	if len(e.Error) > 0 && string(e.Error) != "null" {
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			return s
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &o) == nil && o.Message != "" {
			return o.Message
		}
		return string(e.Error)
	}
	if e.Message != "" {
		return e.Message
	}
	return e.Detail
}
