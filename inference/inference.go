package inference

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by Generate. Test with errors.Is; context.Canceled and
// context.DeadlineExceeded are returned as they are.
var (
	// ErrUnavailable: the backend could not be reached or failed.
	ErrUnavailable = errors.New("backend unavailable")
	// ErrModelNotFound: the backend does not have the model.
	ErrModelNotFound = errors.New("model not found")
	// ErrPromptTooLong: prompt plus generation do not fit the model context.
	ErrPromptTooLong = errors.New("prompt does not fit the model context")
	// ErrIncomplete: the backend ended a stream without finishing it.
	ErrIncomplete = errors.New("backend ended the stream early")
	// ErrInvalidRequest: the request's options are out of range.
	ErrInvalidRequest = errors.New("invalid generation request")
	// ErrNotSent: the request never reached the backend (it could not be
	// connected to, or refused work while its runner restarted), so
	// nothing was evaluated there and another backend may take it. Every
	// ErrNotSent is also ErrUnavailable.
	ErrNotSent = errors.New("request not sent to the backend")
)

// notSentError is ErrNotSent (and ErrUnavailable) with its cause.
type notSentError struct{ err error }

func (e *notSentError) Error() string { return ErrUnavailable.Error() + ": " + e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// Is makes errors.Is true for ErrNotSent and ErrUnavailable.
func (e *notSentError) Is(target error) bool { return target == ErrNotSent || target == ErrUnavailable }

// OptionError is ErrInvalidRequest for one generation option: Field is
// its name in GenerationOptions (max_tokens, temperature, ...).
type OptionError struct {
	Field  string
	Reason string
}

func (e *OptionError) Error() string {
	return ErrInvalidRequest.Error() + ": " + e.Field + " " + e.Reason
}

func (e *OptionError) Is(target error) bool { return target == ErrInvalidRequest }

// ModelError is ErrModelNotFound with the model name and how to get it.
type ModelError struct {
	Model string
	Hint  string
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("model %q not found on the backend: %s", e.Model, e.Hint)
}

// Is makes errors.Is(err, ErrModelNotFound) true.
func (e *ModelError) Is(target error) bool { return target == ErrModelNotFound }

// FinishReason says why a candidate ended.
type FinishReason int

// Finish reasons.
const (
	FinishUnknown FinishReason = iota
	// FinishStop: the model produced a stop token.
	FinishStop
	// FinishLength: MaxTokens was reached.
	FinishLength
	// FinishStopSequence: one of the request's stop strings matched.
	FinishStopSequence
	// FinishBudget: the latency budget passed; the text is partial.
	FinishBudget
)

func (f FinishReason) String() string {
	return [...]string{"unknown", "stop", "length", "stop_sequence", "budget"}[f]
}

// Request is one generation request.
type Request struct {
	// Model is the backend model name; "" means Config.DefaultModel.
	Model string
	// Prompt is the raw prompt, special tokens written as text.
	Prompt string
	// PromptTokens is the caller's exact count of Prompt, used to refuse a
	// prompt that would not fit and to detect silent truncation.
	PromptTokens int
	// MaxTokens per candidate; 0 means Config.DefaultMaxTokens.
	MaxTokens int
	// Temperature; nil means greedy.
	Temperature *float32
	TopP        *float32
	// TopK keeps the k most likely tokens; nil or 0: no limit.
	TopK *int
	// Seed of candidate 0; candidate i uses Seed+i. nil: 0.
	Seed *int64
	// Stop strings applied on top of the model's stop set.
	Stop []string
	// Candidates to make, one backend request each; 0 means 1.
	Candidates int
	// Budget is a latency budget: when it passes, generation stops and the
	// partial result is returned with FinishBudget. Zero means none.
	Budget time.Duration
	// LineBudget, when positive, ends generation at the first text holding
	// a newline that arrives once LineBudget has passed since the
	// candidate's first text (llama.cpp server's t_max_predict_ms): the
	// first line is always whole, and the text ends with that newline. The
	// candidate finishes with FinishBudget.
	LineBudget time.Duration
	// MinIndent, when positive, ends generation at the first line after the
	// first whose indentation (spaces and tabs) is less than MinIndent; a
	// blank line counts as indentation 0. The text keeps that line's
	// indentation and nothing after it (llama.cpp server's n_indent). The
	// candidate finishes with FinishStopSequence.
	MinIndent int
	// WarmOnly evaluates the prompt into the backend's cache and generates
	// nothing (llama.cpp server's n_predict 0): Ollama has no such request
	// (num_predict 0 means no limit there), so one token is generated and
	// dropped. A later prompt sharing a prefix with this one reuses the
	// cached part. The result has one candidate with no text, 0 tokens and
	// FinishLength; Candidates and MaxTokens are ignored.
	WarmOnly bool
}

// Candidate is one finished completion.
type Candidate struct {
	Index  int
	Text   string
	Finish FinishReason
	Tokens int
}

// Result is the outcome of Generate.
type Result struct {
	Model      string
	Candidates []Candidate
	// PromptEvalTokens is what the backend reported evaluating for the
	// first candidate (Ollama omits tokens it reused from its cache, so this
	// can be smaller than the prompt without any truncation).
	PromptEvalTokens int
	PromptEval       time.Duration
	// CachedPromptTokens is what the backend reported reusing from its
	// prompt cache for the first candidate (vLLM's
	// usage.prompt_tokens_details.cached_tokens, llama.cpp server's
	// timings.cache_n); 0 where it does not say (Ollama).
	CachedPromptTokens int
	// TimeToFirstToken is measured from the call to the first text.
	TimeToFirstToken time.Duration
	Total            time.Duration
}

// CompletionTokens sums generated tokens over candidates.
func (r *Result) CompletionTokens() int {
	n := 0
	for _, c := range r.Candidates {
		n += c.Tokens
	}
	return n
}

// DeltaFunc receives text as it is generated. Returning an error stops
// generation and makes Generate return that error.
type DeltaFunc func(candidate int, text string) error
