// Package inference owns the conversation with the model backend: it sends a
// raw Qwen2.5-Coder prompt to Ollama, streams the generated text back,
// applies the stop set and the request's stop strings, makes several
// candidates as separate seeded requests, and turns the backend's quirks
// (a cancelled stream that reports no error, a stream that ends without its
// final message, a prompt that would be silently truncated) into errors.
//
// It knows nothing about gRPC; server/ maps its errors to status codes.
package inference
