package httpapi

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// What the end-to-end tests (package httpapi_test, which servertest's
// import of the server keeps out of this package) share with these.

// PluginCase is a request body recorded from a plugin (testdata) and the
// name of the rule that plugin reads responses with.
type PluginCase struct{ Name, Client, Body string }

// PluginCases returns the recorded plugin bodies.
func PluginCases(t *testing.T) []PluginCase {
	var out []PluginCase
	for _, c := range loadPluginCases(t) {
		name := strings.TrimSuffix(filepath.ToSlash(c.path)[len("testdata/"):], ".txtar")
		out = append(out, PluginCase{Name: name, Client: c.client, Body: c.body})
	}
	return out
}

// ReadAsPlugin reads a response with the named plugin's rule.
func ReadAsPlugin(t *testing.T, client string, resp *http.Response, body []byte) string {
	return clientRules[client](t, resp, body)
}

// Send sends a JSON body to url and returns the response with its body
// read.
func Send(t *testing.T, ctx context.Context, method, url, body string) (*http.Response, []byte) {
	t.Helper()
	return send(t, ctx, method, url, body)
}
