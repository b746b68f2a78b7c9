package impact

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	_ "embed"
)

//go:embed infill_impact.py
var pluginPy string

// childPy is the trace run's sitecustomize: Python processes the tests
// start record their lines for the test that started them.
//
//go:embed infill_child.py
var childPy string

// PluginDir is the directory, relative to the root of the repository's
// copy, that holds the plugin (a dot directory: pytest does not collect it
// and the tracer does not record it).
const PluginDir = ".infill-impact"

const (
	pluginModule = "infill_impact"
	selectFile   = PluginDir + "/selected.json"
	outputTag    = "infill-impact"
)

// PytestConfig says how a repository's tests run under pytest.
type PytestConfig struct {
	// Options are pytest options both the trace and the selected runs get
	// (e.g. "-x" is a bad idea; "-o", "addopts=" may be a good one).
	Options []string
	// Paths are what the trace run collects (default: pytest's own choice,
	// testpaths or the root). Selected runs name the test files instead.
	Paths []string
	// Env is the environment the tests need. A PYTHONPATH in it is kept,
	// after the plugin's directory.
	Env map[string]string
	// Compile are Python files (relative to the repository root) that a
	// selected run compiles before its tests: a syntax error in one is a
	// collection error of the run, even where no selected test imports it.
	Compile []string
	// Shape, when set, makes a selected run check first that the changed
	// file keeps the pristine file's shape (SelectShaped); when it does
	// not, the run prints the line Widened looks for (before anything of
	// the repository runs) and goes on: a failure stands (the whole suite
	// holds the failing tests), a pass must be confirmed by the whole
	// suite.
	Shape *PytestShape
}

// PytestShape names the changed file of a selected run and holds the
// pristine file's text.
type PytestShape struct {
	File     string // slash-separated, relative to the repository root
	Pristine string
}

const (
	shapeEnv      = "INFILL_IMPACT_SHAPE"
	pristineFile  = PluginDir + "/pristine.txt" // not .py: the directory is on sys.path
	widenedPrefix = "infill-impact-widen "
)

// Widened reports whether the selected run with environment env found
// that the changed file's shape differs from the pristine file's
// (PytestConfig.Shape): its selection does not hold, and only a failure
// it shows is the whole suite's verdict.
func Widened(env map[string]string, stdout string) bool {
	var spec struct {
		Nonce string `json:"nonce"`
	}
	if env[shapeEnv] == "" || json.Unmarshal([]byte(env[shapeEnv]), &spec) != nil || spec.Nonce == "" {
		return false
	}
	return strings.Contains(stdout, "\n"+widenedPrefix+spec.Nonce+"\n")
}

// PytestRun is one pytest run: the arguments after `python -m pytest`, the
// files to add to the repository's copy and the environment. It fits the
// sandbox's Python runner's pytest mode as it is.
type PytestRun struct {
	Args  []string
	Files map[string]string
	Env   map[string]string
}

func newPytestRun(cfg PytestConfig, env map[string]string, files map[string]string, paths []string) PytestRun {
	e := map[string]string{}
	for k, v := range cfg.Env {
		e[k] = v
	}
	e["PYTHONPATH"] = PluginDir
	if pp := cfg.Env["PYTHONPATH"]; pp != "" {
		e["PYTHONPATH"] = PluginDir + ":" + pp
	}
	for k, v := range env {
		e[k] = v
	}
	files[PluginDir+"/"+pluginModule+".py"] = pluginPy
	args := []string{"-p", pluginModule, "-p", "no:cacheprovider"}
	args = append(args, cfg.Options...)
	args = append(args, paths...)
	return PytestRun{Args: args, Files: files, Env: e}
}

// ErrNoOutput is returned (wrapped) when a trace run ends without the map:
// pytest could not start, the plugin was not loaded, or the run was cut.
var ErrNoOutput = errors.New("impact: the trace run wrote no map")

// PytestTrace is the run that traces a suite once: run Run in the
// sandbox's pytest mode and give what it wrote to stdout to Parse. Parse needs the end of
// stdout only, from the line before the map on.
type PytestTrace struct {
	Run   PytestRun
	nonce string
}

// NewPytestTrace returns the trace run of the suite cfg describes.
func NewPytestTrace(cfg PytestConfig) (PytestTrace, error) {
	nonce := newNonce()
	run := newPytestRun(cfg, map[string]string{"INFILL_IMPACT_TRACE": nonce},
		map[string]string{PluginDir + "/sitecustomize.py": childPy}, cfg.Paths)
	return PytestTrace{Run: run, nonce: nonce}, nil
}

// Parse decodes the map from the trace run's stdout.
func (t PytestTrace) Parse(stdout []byte) (*Map, error) { return parseTrace(stdout, t.nonce) }

// parseTrace finds the plugin's line for nonce in out (the last one, so
// that nothing the tests printed earlier can stand in for it) and decodes
// the map.
func parseTrace(out []byte, nonce string) (*Map, error) {
	tag := []byte(outputTag + " " + nonce + " ")
	i := bytes.LastIndex(out, tag)
	if i < 0 || (i > 0 && out[i-1] != '\n') {
		return nil, fmt.Errorf("%w; output ends: %q", ErrNoOutput, tail(out, 2000))
	}
	line := out[i+len(tag):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	} else {
		return nil, fmt.Errorf("%w: the map line is cut short", ErrNoOutput)
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(line)))
	n, err := base64.StdEncoding.Decode(raw, line)
	if err != nil {
		return nil, fmt.Errorf("impact: decoding the map: %w", err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[:n]))
	if err != nil {
		return nil, fmt.Errorf("impact: decoding the map: %w", err)
	}
	defer zr.Close()
	var m Map
	dec := json.NewDecoder(io.LimitReader(zr, 1<<30))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("impact: decoding the map: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// newNonce returns a random hex token that marks the plugin's lines in a
// run's output (crypto/rand.Read never fails).
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// ErrNoTests is returned by PytestTests for an empty selection: no test
// reaches the span, so no run can say anything about it.
var ErrNoTests = errors.New("impact: no tests selected")

// PytestTests returns the pytest run of just ids, node ids relative to the
// repository root (as RootRelative writes them); the run's rootdir is the
// repository root. It names the test files on the command line (short
// whatever the ids: parametrised ids with brackets and spaces stay off it)
// and lists the ids in a file the plugin reads; the plugin deselects every
// other item and stops the run with exit status 4 if a listed id is not
// collected (unless collection failed: a test module that no longer
// imports is the run's failure, reported as pytest reports it).
func PytestTests(ids []string, cfg PytestConfig) (PytestRun, error) {
	return selectionRun(ids, ".", cfg)
}

// RootRelative returns ids (node ids relative to m.RootDir) relative to
// the repository root, the form PytestTests takes.
func (m *Map) RootRelative(ids []TestID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		file, rest, ok := strings.Cut(id, "::")
		out[i] = path.Join(m.RootDir, file)
		if ok {
			out[i] += "::" + rest
		}
	}
	return out
}

// validRel says whether f is a clean relative path inside the repository.
func validRel(f string) bool {
	return f != "" && !path.IsAbs(f) && !strings.HasPrefix(path.Clean(f), "..") && !strings.ContainsRune(f, 0)
}

func selectionRun(ids []string, rootDir string, cfg PytestConfig) (PytestRun, error) {
	if len(ids) == 0 {
		return PytestRun{}, ErrNoTests
	}
	var paths []string
	seen := map[string]bool{}
	for _, id := range ids {
		file, _, _ := strings.Cut(id, "::")
		if !validRel(file) || strings.HasPrefix(file, "-") {
			return PytestRun{}, fmt.Errorf("impact: test %q does not name a file inside the repository", id)
		}
		p := path.Join(rootDir, file)
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return PytestRun{}, err
	}
	env := map[string]string{"INFILL_IMPACT_SELECT": selectFile}
	if len(cfg.Compile) > 0 {
		for _, f := range cfg.Compile {
			if !validRel(f) {
				return PytestRun{}, fmt.Errorf("impact: file to compile %q must be relative and inside the repository", f)
			}
		}
		c, err := json.Marshal(cfg.Compile)
		if err != nil {
			return PytestRun{}, err
		}
		env["INFILL_IMPACT_COMPILE"] = string(c)
	}
	files := map[string]string{selectFile: string(list)}
	if sh := cfg.Shape; sh != nil {
		if !validRel(sh.File) {
			return PytestRun{}, fmt.Errorf("impact: changed file %q must be relative and inside the repository", sh.File)
		}
		spec, err := json.Marshal(map[string]string{"file": sh.File, "pristine": pristineFile, "nonce": newNonce()})
		if err != nil {
			return PytestRun{}, err
		}
		env[shapeEnv], files[pristineFile] = string(spec), sh.Pristine
	}
	run := newPytestRun(cfg, env, files, paths)
	// Node ids are relative to the rootdir; naming files could move it.
	run.Args = slices.Insert(run.Args, 4, "--rootdir="+rootDir)
	return run, nil
}
