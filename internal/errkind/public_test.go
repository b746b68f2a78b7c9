package errkind

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

var errInvalidTask = New(InvalidArgument, "evaluator: invalid task")

func TestClientMessage(t *testing.T) {
	_, statErr := os.Stat("/srv/infill/repos/nope")
	_, lookErr := exec.LookPath("/opt/tools/bin/missing-tool")
	for name, tc := range map[string]struct {
		err        error
		want       string
		notVisible string
	}{
		"path error":     {statErr, "stat …/nope: no such file or directory", "/srv"},
		"wrapped":        {fmt.Errorf("task t: %w", statErr), "task t: stat …/nope: no such file or directory", "/srv"},
		"joined":         {errors.Join(errors.New("a"), statErr), "a\nstat …/nope: no such file or directory", "/srv"},
		"two %w":         {fmt.Errorf("%w: %w", errInvalidTask, statErr), "evaluator: invalid task: stat …/nope: no such file or directory", "/srv"},
		"link error":     {&os.LinkError{Op: "rename", Old: "/a/b/c", New: "/d/e", Err: fs.ErrExist}, "rename …/c …/e: file already exists", "/a/"},
		"exec error":     {lookErr, "exec: \"…/missing-tool\"", "/opt"},
		"bare name kept": {&fs.PathError{Op: "open", Path: "a.py", Err: fs.ErrNotExist}, "open a.py: file does not exist", ""},
		"hidden detail": {fmt.Errorf("run 3: %w", &HiddenError{Public: "setup failed", Err: errors.New("bwrap: can't mount /tmp/x")}),
			"run 3: setup failed", "/tmp"},
		"no path": {errors.New("plain"), "plain", ""},
	} {
		got := ClientMessage(tc.err)
		if !strings.HasPrefix(got, tc.want) || tc.notVisible != "" && strings.Contains(got, tc.notVisible) {
			t.Errorf("%s: ClientMessage = %q, want %q without %q", name, got, tc.want, tc.notVisible)
		}
	}
	if ClientMessage(nil) != "" {
		t.Error("ClientMessage(nil) not empty")
	}
}

// Of finds the kind an error reports through wrapping, and none in an
// error that reports none.
func TestOf(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want Kind
		ok   bool
	}{
		"sentinel":  {errInvalidTask, InvalidArgument, true},
		"wrapped":   {fmt.Errorf("task t: %w", errInvalidTask), InvalidArgument, true},
		"joined":    {errors.Join(errors.New("a"), fmt.Errorf("b: %w", New(NotFound, "x"))), NotFound, true},
		"first one": {fmt.Errorf("%w: %w", New(Aborted, "a"), New(NotFound, "b")), Aborted, true},
		"none":      {errors.New("plain"), Internal, false},
		"nil":       {nil, Internal, false},
	} {
		if got, ok := Of(tc.err); got != tc.want || ok != tc.ok {
			t.Errorf("%s: Of = %v, %v; want %v, %v", name, got, ok, tc.want, tc.ok)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", errInvalidTask), errInvalidTask) || errInvalidTask.Error() != "evaluator: invalid task" {
		t.Error("a kind sentinel is not itself under errors.Is, or its text changed")
	}
	if d := RetryDelay(fmt.Errorf("x: %w", retryAfter{})); d != 3 {
		t.Errorf("RetryDelay = %v, want 3", d)
	}
	if RetryDelay(errInvalidTask) != 0 {
		t.Error("RetryDelay of an error without a delay is not 0")
	}
}

type retryAfter struct{}

func (retryAfter) Error() string             { return "later" }
func (retryAfter) RetryDelay() time.Duration { return 3 }
