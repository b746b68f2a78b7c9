package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/infill-dev/infill/server/pipeline"
)

// dialect is an HTTP surface's request and error style.
type dialect int

const (
	dialectNone     dialect = iota // unknown path: OpenAI-style errors
	dialectLlamaCpp                // llama.cpp server
	dialectOllama                  // Ollama
	dialectOpenAI                  // OpenAI /v1
	dialectTabby                   // Tabby
)

func (d dialect) String() string {
	return [...]string{"http", "llama.cpp", "ollama", "openai", "tabby"}[d]
}

// httpError is an error with its HTTP status, raised by the surfaces
// themselves (bad JSON, wrong method, a body too large).
type httpError struct {
	status int
	msg    string
	param  string // the request field at fault, where known
}

func (e *httpError) Error() string { return e.msg }

func errNotFound(path string) error {
	return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("no such endpoint: %s", path)}
}

func badRequest(param, format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...), param: param}
}

// kindStatus is the one table from the pipeline's error kinds to HTTP
// statuses, shared by every dialect (each writes its own body).
var kindStatus = map[pipeline.Kind]int{
	pipeline.KindInternal:           http.StatusInternalServerError,
	pipeline.KindInvalidArgument:    http.StatusBadRequest,
	pipeline.KindMissingContent:     http.StatusConflict,
	pipeline.KindUnknownSnapshot:    http.StatusConflict,
	pipeline.KindFailedPrecondition: http.StatusBadRequest,
	pipeline.KindNotFound:           http.StatusNotFound,
	pipeline.KindPermissionDenied:   http.StatusForbidden,
	pipeline.KindAborted:            http.StatusConflict,
	pipeline.KindUnavailable:        http.StatusServiceUnavailable,
	pipeline.KindResourceExhausted:  http.StatusTooManyRequests,
	pipeline.KindCanceled:           499, // nginx's "client closed request"; the client is gone anyway
	pipeline.KindDeadlineExceeded:   http.StatusGatewayTimeout,
	pipeline.KindUnauthenticated:    http.StatusUnauthorized,
}

// problem is an error ready to write: status, a message safe for the
// client, an OpenAI-style type and the field at fault.
type problem struct {
	status     int
	msg        string
	typ        string
	param      string
	retryAfter time.Duration
	hidden     bool // msg leaves out detail of the error (the log keeps it)
}

func toProblem(err error) problem {
	var he *httpError
	if errors.As(err, &he) {
		return problem{status: he.status, msg: he.msg, typ: errorType(he.status), param: he.param}
	}
	c := pipeline.Classify(err)
	p := problem{status: kindStatus[c.Kind], msg: c.Message, param: c.Field, retryAfter: c.RetryAfter, hidden: c.Hidden}
	if c.Kind == pipeline.KindInternal {
		p.msg = "internal error"
	}
	p.typ = errorType(p.status)
	return p
}

// errorType is the OpenAI-style error type for a status (llama.cpp server
// uses the same names).
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusServiceUnavailable:
		return "unavailable_error"
	case status < 500:
		return "invalid_request_error"
	}
	return "server_error"
}

// writeError writes err in dialect d's style. Internal errors are recorded
// for the log line, never shown.
func writeError(w http.ResponseWriter, r *http.Request, d dialect, err error) {
	p := toProblem(err)
	if p.status >= 500 || p.hidden {
		infoOf(r).err = err
	}
	if p.retryAfter > 0 { // whole seconds, rounded up, as HTTP has them
		w.Header().Set("Retry-After", strconv.Itoa(int((p.retryAfter+time.Second-1)/time.Second)))
	}
	var body any
	switch d {
	case dialectOllama:
		body = map[string]string{"error": p.msg}
	case dialectLlamaCpp:
		body = map[string]any{"error": map[string]any{"code": p.status, "message": p.msg, "type": p.typ}}
	default: // OpenAI and Tabby, and unknown paths
		e := map[string]any{"message": p.msg, "type": p.typ, "code": nil, "param": nil}
		if p.param != "" {
			e["param"] = p.param
		}
		body = map[string]any{"error": e}
	}
	writeJSON(w, p.status, body)
}

// writeJSON writes v as compact JSON (llama.vim finds "content":" with no
// space, so no indentation anywhere).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decodeJSON reads r's body into v: malformed JSON is 400 and a body over
// the limit 413; unknown fields are ignored (plugins send many).
func decodeJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("request body over the limit of %d bytes", mbe.Limit)}
		}
		return &httpError{status: http.StatusBadRequest, msg: "reading the request body: " + err.Error()}
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("", "empty request body: a JSON object is required")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return badRequest(te.Field, "field %q: %s is not a valid %s", te.Field, te.Value, te.Type)
		}
		return badRequest("", "malformed JSON: %v", err)
	}
	return nil
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
