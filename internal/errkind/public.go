package errkind

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HiddenError is an error whose detail (the server's paths, a tool's raw
// output) belongs in the server's log, not in an answer to a client:
// Error is the whole text, for the log; ClientMessage puts Public in
// place of it.
type HiddenError struct {
	// Public is what a client is told instead.
	Public string
	Err    error
}

func (e *HiddenError) Error() string { return e.Err.Error() }
func (e *HiddenError) Unwrap() error { return e.Err }

// ClientMessage returns err's text as a client may see it: the text of
// each HiddenError in err's chain is replaced by its Public message, and
// each path with a directory that an *fs.PathError, *os.LinkError or
// *exec.Error in the chain names is cut to …/ and its last element. Errors that format
// a server path into their text themselves defeat this: a path belongs in
// a PathError (wrapped with %w), never in a format string.
func ClientMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	walk(err, func(e error) {
		switch e := e.(type) {
		case *HiddenError:
			if t := e.Err.Error(); t != "" {
				msg = strings.ReplaceAll(msg, t, e.Public)
			}
		case *fs.PathError:
			msg = hidePath(msg, e.Path)
		case *os.LinkError:
			msg = hidePath(hidePath(msg, e.Old), e.New)
		case *exec.Error:
			msg = hidePath(msg, e.Name)
		}
	})
	return msg
}

// walk calls f on err and every error it wraps, depth first, outermost
// first.
func walk(err error, f func(error)) {
	for err != nil {
		f(err)
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, f)
			}
			return
		default:
			err = errors.Unwrap(err)
		}
	}
}

func hidePath(msg, p string) string {
	if filepath.Base(p) == p || p == "/" { // a bare name shows no layout
		return msg
	}
	return strings.ReplaceAll(msg, p, "…/"+filepath.Base(p))
}
