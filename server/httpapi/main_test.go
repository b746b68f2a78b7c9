package httpapi

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

var update = flag.Bool("update", false, "rewrite the want.* sections of testdata/*/*.txtar")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// http.Transport idle connections (to the test Ollama, and the
		// test clients' own) are closed lazily by the transport; they are
		// not request goroutines.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
