// Package errkind lets a domain package say what kind of failure its
// errors are, independent of transport, and what of an error's text a
// client may see. The server's pipeline sorts an error by the kind it
// reports (Of) without importing the package it came from, and each
// surface maps kinds to its own codes in one table (gRPC: server/status.go,
// HTTP: server/httpapi/errors.go). The package imports nothing of grpc or
// net/http.
package errkind

import (
	"errors"
	"strconv"
	"time"
)

// Kind is what went wrong with a call, named after the gRPC code it maps
// to.
type Kind int

// Kinds.
const (
	Internal Kind = iota
	InvalidArgument
	// MissingContent: digests the server does not hold; the client resends
	// their content.
	MissingContent
	// UnknownSnapshot: a repository snapshot the server does not hold.
	UnknownSnapshot
	FailedPrecondition
	NotFound
	PermissionDenied
	Aborted
	Unavailable
	ResourceExhausted
	Canceled
	DeadlineExceeded
	Unauthenticated
)

var kindNames = [...]string{"internal", "invalid-argument", "missing-content", "unknown-snapshot",
	"failed-precondition", "not-found", "permission-denied", "aborted", "unavailable", "resource-exhausted",
	"canceled", "deadline-exceeded", "unauthenticated"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Kinded is implemented by errors that know their kind.
type Kinded interface {
	error
	ErrorKind() Kind
}

// Delayed is implemented by errors whose call may be tried again after a
// delay (ResourceExhausted).
type Delayed interface {
	error
	RetryDelay() time.Duration
}

// Of returns the kind that err, or the first error it wraps that knows its
// kind (errors.As order: depth first), reports; ok is false when none does.
func Of(err error) (k Kind, ok bool) {
	var e Kinded
	if errors.As(err, &e) {
		return e.ErrorKind(), true
	}
	return Internal, false
}

// RetryDelay returns the delay the first Delayed error in err's tree asks
// for, 0 when none does.
func RetryDelay(err error) time.Duration {
	var e Delayed
	if errors.As(err, &e) {
		return e.RetryDelay()
	}
	return 0
}

// New returns an error with text that reports kind k: a sentinel to wrap
// with %w and test with errors.Is.
func New(k Kind, text string) error { return &kindError{kind: k, text: text} }

type kindError struct {
	kind Kind
	text string
}

func (e *kindError) Error() string   { return e.text }
func (e *kindError) ErrorKind() Kind { return e.kind }
