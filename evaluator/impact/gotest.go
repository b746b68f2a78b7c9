package impact

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// GoConfig says how a Go module's tests run. Dependencies must already be
// in the module cache or vendored: the run sets GOPROXY=off and
// GOTOOLCHAIN=local unless Env says otherwise.
type GoConfig struct {
	// Go is the go command the Runner starts (default "go").
	Go string
	// Env is the environment the build and tests need (GOCACHE and GOPATH
	// somewhere writable, GOMODCACHE, GOFLAGS).
	Env map[string]string
}

func (c GoConfig) goCmd() string {
	if c.Go == "" {
		return "go"
	}
	return c.Go
}

func (c GoConfig) env() map[string]string {
	e := map[string]string{"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOTELEMETRY": "off"}
	for k, v := range c.Env {
		e[k] = v
	}
	return e
}

// goTraceScript runs every package with tests once, with coverage of every
// package of the module, and prints each profile after a marker line; the
// tests' own output goes to stderr.
const goTraceScript = `set -u
go=$1; nonce=$2; prof=$(mktemp)
mod=$("$go" list -m) || exit 1
echo "infill-impact-go module $mod"
for p in $("$go" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do
  "$go" test -count=1 -covermode=set -coverpkg=./... -coverprofile="$prof" "$p" >&2
  echo "infill-impact-go package $? $p"
  cat "$prof" 2>/dev/null; rm -f "$prof"
done
echo "infill-impact-go end $nonce"
`

// TraceGo runs the tests of every package of the Go module in dir once,
// through r, each package's test binary covering every package of the
// module, and returns a Map whose tests are package import paths: a span
// selects the packages whose tests execute it. Lines outside every
// coverage block (package-level declarations, var initialisers run at init,
// imports) select every package, as do spans in _test.go files.
func TraceGo(ctx context.Context, r Runner, dir string, cfg GoConfig) (*Map, error) {
	nonce := newNonce()
	out, err := r.Run(ctx, Command{Dir: dir, Env: cfg.env(),
		Argv: []string{"sh", "-c", goTraceScript, "sh", cfg.goCmd(), nonce}})
	if err != nil {
		return nil, fmt.Errorf("impact: go trace run: %w", err)
	}
	if !bytes.Contains(out, []byte("infill-impact-go end "+nonce+"\n")) {
		return nil, fmt.Errorf("%w; output ends: %q", ErrNoOutput, tail(out, 2000))
	}
	return parseGoTrace(out, dir)
}

// parseGoTrace reads the module path and the per-package profiles; dir is
// read (never run) for line counts and test file names.
func parseGoTrace(out []byte, dir string) (*Map, error) {
	m := &Map{Version: MapVersion, Tracer: "go test -coverpkg", RootDir: ".", Files: map[string]FileImpact{}}
	var module string
	covered := map[string]map[int]bool{} // file -> lines inside some block
	lines := map[string]map[int][]int{}  // file -> line -> packages executing it
	cur := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "infill-impact-go "); ok {
			f := strings.Fields(rest)
			switch {
			case len(f) == 2 && f[0] == "module":
				module = f[1]
			case len(f) == 3 && f[0] == "package":
				cur = len(m.Tests)
				m.Tests = append(m.Tests, f[2])
				outcome := "passed"
				if f[1] != "0" {
					outcome = "failed"
				}
				m.Outcomes = append(m.Outcomes, outcome)
			}
			continue
		}
		if cur < 0 || module == "" || strings.HasPrefix(line, "mode: ") || line == "" {
			continue
		}
		file, first, last, count, err := parseProfileLine(line)
		if err != nil {
			return nil, err
		}
		rel, ok := strings.CutPrefix(file, module+"/")
		if !ok {
			continue // a package outside the module
		}
		if covered[rel] == nil {
			covered[rel], lines[rel] = map[int]bool{}, map[int][]int{}
		}
		for l := first; l <= last; l++ {
			covered[rel][l] = true
			if count > 0 && !slices.Contains(lines[rel][l], cur) {
				lines[rel][l] = append(lines[rel][l], cur)
			}
		}
	}
	if module == "" {
		return nil, fmt.Errorf("%w: no module path", ErrNoOutput)
	}
	for rel, cov := range covered {
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("impact: %w", err)
		}
		fi := FileImpact{Lines: map[int][]int{}}
		n := bytes.Count(src, []byte{'\n'}) + 1
		for l := 1; l <= n; l++ {
			if !cov[l] {
				fi.All = append(fi.All, l)
			}
		}
		for l, ix := range lines[rel] {
			fi.Lines[l] = ix
		}
		m.Files[rel] = fi
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			m.TestFiles = append(m.TestFiles, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("impact: listing test files: %w", err)
	}
	return m, m.Validate()
}

// parseProfileLine reads "path/file.go:l1.c1,l2.c2 statements count".
func parseProfileLine(line string) (file string, first, last, count int, err error) {
	bad := fmt.Errorf("impact: bad coverage profile line %q", line)
	colon := strings.LastIndexByte(line, ':')
	if colon < 0 {
		return "", 0, 0, 0, bad
	}
	f := strings.Fields(line[colon+1:])
	if len(f) != 3 {
		return "", 0, 0, 0, bad
	}
	start, end, ok := strings.Cut(f[0], ",")
	l1, _, ok1 := strings.Cut(start, ".")
	l2, _, ok2 := strings.Cut(end, ".")
	if !ok || !ok1 || !ok2 {
		return "", 0, 0, 0, bad
	}
	a, err1 := strconv.Atoi(l1)
	z, err2 := strconv.Atoi(l2)
	c, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil || a < 1 || z < a {
		return "", 0, 0, 0, bad
	}
	return line[:colon], a, z, c, nil
}

// GoSelection returns the command that tests just the packages ids (from
// Select on a Map from TraceGo), with -json so that a grader can require
// every test to pass rather than exit status 0 alone.
func GoSelection(m *Map, ids []TestID, cfg GoConfig) (Command, error) {
	if len(ids) == 0 {
		return Command{}, ErrNoTests
	}
	for _, id := range ids {
		if !slices.Contains(m.Tests, id) {
			return Command{}, fmt.Errorf("impact: package %q is not in the map", id)
		}
	}
	return Command{Env: cfg.env(), Argv: append([]string{cfg.goCmd(), "test", "-count=1", "-json"}, ids...)}, nil
}
