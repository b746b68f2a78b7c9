// Package inference owns the conversation with the model backend: it sends a
// raw Qwen2.5-Coder prompt to Ollama, streams the generated text back,
// applies the stop set, the request's stop strings and llama.cpp server's
// stop rules (minimum indentation, a time limit that ends at a line end),
// makes several candidates as separate seeded requests, warms the backend's
// prompt cache without generating, and turns the backend's quirks
// (a cancelled stream that reports no error, a stream that ends without its
// final message, a prompt that would be silently truncated) into errors.
//
// It knows nothing about gRPC; server/ maps its errors to status codes.
package inference
