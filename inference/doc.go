// Package inference owns the conversation with the model backends: it sends
// a raw Qwen2.5-Coder prompt to Ollama's native API (Ollama) or to any
// server speaking OpenAI's /v1/completions with a raw prompt (OpenAI: vLLM,
// SGLang, llama.cpp's server, Ollama's own /v1), streams the generated
// text back, applies the stop set, the request's stop strings and
// llama.cpp server's stop rules (minimum indentation, a time limit that
// ends at a line end), makes several candidates as separate seeded
// requests, warms the backend's prompt cache without generating, and turns
// the backends' quirks (a cancelled stream that reports no error, a stream
// that ends without its final message, a prompt that would be silently
// truncated, a backend that accepts a request and never answers it, a
// malformed or error event) into errors. Both kinds share one generation
// loop (core) and differ only in how a candidate is requested and its
// stream read, so the pipeline cannot tell them apart. Each also keeps what
// its generations have seen of the backend's health (Activity) and can
// probe it with a one-token generation (Probe), for a health check that
// must notice a backend that still answers a ping but no longer generates;
// a request that never reached the backend fails with ErrNotSent, so that
// a caller with several backends may send it to another.
//
// It knows nothing about gRPC; server/ maps its errors to status codes.
package inference
