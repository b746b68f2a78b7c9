package infill

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestFormatError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want string
	}{
		{status.Error(codes.InvalidArgument, "cursor.line: line 99 past end of file (12 lines)"),
			"INVALID_ARGUMENT: cursor.line: line 99 past end of file (12 lines)"},
		{status.Error(codes.NotFound, "model \"x\" not found:\nrun `ollama pull x`"),
			"NOT_FOUND: model \"x\" not found: run `ollama pull x`"},
		{fmt.Errorf("stream: %w", status.Error(codes.Unavailable, "backend down")), "UNAVAILABLE: backend down"},
		{context.Canceled, "CANCELLED: context canceled"},
		{fmt.Errorf("wait: %w", context.DeadlineExceeded), "DEADLINE_EXCEEDED: wait: context deadline exceeded"},
		{errors.New("open a.py: no such file"), "open a.py: no such file"},
		{nil, ""},
	}
	for _, c := range cases {
		if got := FormatError(c.err); got != c.want {
			t.Errorf("FormatError(%v)\n got %q\nwant %q", c.err, got, c.want)
		}
	}
}

func TestCodeNameCoversAllCodes(t *testing.T) {
	t.Parallel()
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if name := CodeName(c); name == c.String() && c != codes.OK {
			t.Errorf("no canonical name for %v", c)
		}
	}
	if CodeName(codes.Canceled) != "CANCELLED" {
		t.Error("CANCELLED is spelled as in the API")
	}
}
