// Package inference owns the conversation with the model backend: it sends a
// raw Qwen2.5-Coder prompt to Ollama, streams the generated text back,
// applies the stop set, the request's stop strings and llama.cpp server's
// stop rules (minimum indentation, a time limit that ends at a line end),
// makes several candidates as separate seeded requests, warms the backend's
// prompt cache without generating, and turns the backend's quirks
// (a cancelled stream that reports no error, a stream that ends without its
// final message, a prompt that would be silently truncated, a backend that
// accepts a request and never answers it) into errors. It also keeps what
// its generations have seen of the backend's health (Activity) and can
// probe it with a one-token generation (Probe), for a health check that
// must notice a backend that still answers /api/version but no longer
// generates.
//
// It knows nothing about gRPC; server/ maps its errors to status codes.
package inference
