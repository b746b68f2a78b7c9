// Package contextpack owns prompt assembly: it resolves the cursor in the
// request's repository, chooses prefix, suffix and cross-file context under
// an exact token budget, and renders the Qwen2.5-Coder fill-in-the-middle or
// repository-level prompt together with a manifest of what went in and what
// was left out.
//
// It knows nothing about gRPC or the backend: the server converts requests
// into a Request and maps the errors below to status codes.
package contextpack
