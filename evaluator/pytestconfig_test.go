package evaluator

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReadPytestConfig reads the files pytest reads, in its order, as it
// splits them.
func TestReadPytestConfig(t *testing.T) {
	for name, c := range map[string]struct {
		files   map[string]string
		want    pytestConfig
		wantErr bool
	}{
		"pytest.ini first, continuation lines, comments": {
			files: map[string]string{
				"pytest.ini":     "[pytest]\naddopts =\n    --import-mode=importlib\n    --cov=semver\n    --doctest-glob='*.rst'\n    --doctest-report ndiff\nfilterwarnings =\n    ignore:Function 'semver.*:DeprecationWarning\n    # ' <- a comment\n    error\n",
				"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-x\"\n",
			},
			want: pytestConfig{File: "pytest.ini", Addopts: []string{"--import-mode=importlib", "--cov=semver", "--doctest-glob=*.rst", "--doctest-report", "ndiff"},
				Filterwarnings: []string{"ignore:Function 'semver.*:DeprecationWarning", "error"}},
		},
		"pyproject with lists": {
			files: map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = [\"--strict-config\", \"-ra\"]\nfilterwarnings = [\n  \"error\",\n  \"ignore:sys.monitoring isn't available:coverage.exceptions.CoverageWarning\",\n]\npythonpath = [\"src\", \"tests\"]\n",
				"setup.cfg": "[tool:pytest]\naddopts = -q\n"},
			want: pytestConfig{File: "pyproject.toml", Addopts: []string{"--strict-config", "-ra"},
				Filterwarnings: []string{"error", "ignore:sys.monitoring isn't available:coverage.exceptions.CoverageWarning"}, Pythonpath: []string{"src", "tests"}},
		},
		"pyproject without the table, then tox.ini": {
			files: map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n", "tox.ini": "[tox]\nenvlist = py3\n[pytest]\naddopts = --cov x -p no:cacheprovider\n"},
			want:  pytestConfig{File: "tox.ini", Addopts: []string{"--cov", "x", "-p", "no:cacheprovider"}},
		},
		"setup.cfg": {
			files: map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\naddopts = --cov=x \"--cov-report=term missing\"\n"},
			want:  pytestConfig{File: "setup.cfg", Addopts: []string{"--cov=x", "--cov-report=term missing"}},
		},
		"none":          {files: map[string]string{"README": "x"}, want: pytestConfig{}},
		"bad pyproject": {files: map[string]string{"pyproject.toml": "[tool.pytest.ini_options\n"}, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readPytestConfig(writeConfig(t, c.files))
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v", err)
			}
			if !c.wantErr && (got.File != c.want.File || !slices.Equal(got.Addopts, c.want.Addopts) ||
				!slices.Equal(got.Filterwarnings, c.want.Filterwarnings) || !slices.Equal(got.Pythonpath, c.want.Pythonpath)) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestShellSplitJoin(t *testing.T) {
	for in, want := range map[string][]string{
		`-q  --cov=x`:                     {"-q", "--cov=x"},
		`--doctest-glob='*.rst' -k "a b"`: {"--doctest-glob=*.rst", "-k", "a b"},
		`a\ b "c\"d" ''`:                  {"a b", `c"d`, ""},
	} {
		got := shellSplit(in)
		if !slices.Equal(got, want) {
			t.Errorf("shellSplit(%q) = %q, want %q", in, got, want)
		}
		if back := shellSplit(shellJoin(got)); !slices.Equal(back, got) {
			t.Errorf("shellJoin(%q) = %q does not split back", got, shellJoin(got))
		}
	}
}

// TestFixPytest: each configuration failure pytest reports is undone by
// the narrowest override, on top of the overrides made before.
func TestFixPytest(t *testing.T) {
	repo := writeConfig(t, map[string]string{"src/pkg/__init__.py": "", "lib/other.py": ""})
	cfg := pytestConfig{File: "pytest.ini", Addopts: []string{"-ra", "--cov", "pkg", "--cov-report=xml", "-p", "pytest_mock", "--strict-markers"},
		Filterwarnings: []string{"error", "error::coverage.exceptions.CoverageWarning", "ignore::UserWarning"}, Pythonpath: []string{"tests"}}
	base := TestSpec{Kind: TestPytest, Args: []string{"-q"}}
	for name, c := range map[string]struct {
		test     TestSpec
		output   string
		wantArgs []string
		wantNote string
	}{
		"plugin options": {base, "ERROR: usage: __main__.py [options] [file_or_dir] [file_or_dir] [...]\n__main__.py: error: unrecognized arguments: --cov --cov-report=xml\n",
			[]string{"-q", "-o", "addopts=-ra -p pytest_mock --strict-markers"}, "dropped --cov pkg --cov-report=xml from the addopts of pytest.ini (pytest-cov is not installed)"},
		"after an earlier override": {TestSpec{Kind: TestPytest, Args: []string{"-q", "-o", "addopts=-ra -p pytest_mock"}},
			"ImportError: Error importing plugin \"pytest_mock\": No module named 'pytest_mock'\n",
			[]string{"-q", "-o", "addopts=-ra"}, "dropped -p pytest_mock from the addopts of pytest.ini"},
		"warning filter": {base, "ERROR: while parsing the following warning configuration:\n\n  error::coverage.exceptions.CoverageWarning\n\nThis error occurred:\n\nTraceback (most recent call last):\nModuleNotFoundError: No module named 'coverage'\n",
			[]string{"-q", "-o", "filterwarnings=error\nignore::UserWarning"}, `dropped the warning filter "error::coverage.exceptions.CoverageWarning" from pytest.ini`},
		"required plugins": {base, "Missing required plugins: pytest-cov\n", []string{"-q", "-o", "required_plugins="}, "ignored required_plugins of pytest.ini"},
		"own package under src": {base, "E   ModuleNotFoundError: No module named 'pkg.sub'\n",
			[]string{"-q", "-o", "pythonpath=tests src"}, "added src to pytest's pythonpath: the tests import pkg"},
		"options of the command itself":         {TestSpec{Kind: TestPytest, Args: []string{"--typo"}}, "error: unrecognized arguments: --typo\n", nil, ""},
		"a module that is not the repository's": {base, "E   ModuleNotFoundError: No module named 'yaml'\n", nil, ""},
		"a test failure":                        {base, "FAILED tests/test_x.py::test_y - assert 1 == 2\n", nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			res := &Result{StderrTail: c.output}
			got, note, ok := fixPytest(repo, cfg, c.test, res)
			if ok != (c.wantArgs != nil) {
				t.Fatalf("fixed %v (%q, %q)", ok, got.Args, note)
			}
			if !ok {
				return
			}
			if !slices.Equal(got.Args, c.wantArgs) || !strings.HasPrefix(note, c.wantNote) {
				t.Errorf("args %q note %q\nwant %q %q...", got.Args, note, c.wantArgs, c.wantNote)
			}
		})
	}
}
