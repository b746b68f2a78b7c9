package evaluator

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// pytestConfig is what a repository's pytest configuration says about the
// options Build may have to neutralise: where it is, addopts (as pytest
// splits them) and the warning filters, in order.
type pytestConfig struct {
	// File is the configuration file, relative to the repository ("" when
	// there is none).
	File           string
	Addopts        []string
	Filterwarnings []string
	Pythonpath     []string
}

// readPytestConfig reads the configuration pytest would use when run at
// the repository's root: the first of pytest.ini, .pytest.ini,
// pyproject.toml with [tool.pytest.ini_options], tox.ini with [pytest]
// and setup.cfg with [tool:pytest].
func readPytestConfig(repoDir string) (pytestConfig, error) {
	type cand struct{ file, section string }
	for _, c := range []cand{{"pytest.ini", "pytest"}, {".pytest.ini", "pytest"}, {"pyproject.toml", ""},
		{"tox.ini", "pytest"}, {"setup.cfg", "tool:pytest"}} {
		data, err := os.ReadFile(filepath.Join(repoDir, c.file))
		if err != nil {
			continue
		}
		var vals map[string]any
		var ok bool
		if c.file == "pyproject.toml" {
			vals, ok, err = tomlPytest(data)
		} else {
			vals, ok = iniSection(string(data), c.section)
			if strings.HasPrefix(c.file, "pytest") || c.file == ".pytest.ini" {
				ok = true // pytest.ini is the configuration even without [pytest]
			}
		}
		if err != nil {
			return pytestConfig{}, fmt.Errorf("%s: %w", c.file, err)
		}
		if !ok {
			continue
		}
		cfg := pytestConfig{File: c.file}
		cfg.Addopts = splitArgs(vals["addopts"])
		cfg.Filterwarnings = lines(vals["filterwarnings"])
		cfg.Pythonpath = splitArgs(vals["pythonpath"])
		return cfg, nil
	}
	return pytestConfig{}, nil
}

// tomlPytest reads [tool.pytest.ini_options].
func tomlPytest(data []byte) (map[string]any, bool, error) {
	var doc struct {
		Tool struct {
			Pytest struct {
				IniOptions map[string]any `toml:"ini_options"`
			} `toml:"pytest"`
		} `toml:"tool"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, false, err
	}
	opts := doc.Tool.Pytest.IniOptions
	return opts, opts != nil, nil
}

// iniSection reads one section of an INI file as pytest's iniconfig does:
// "key = value" or "key: value", indented lines continue the value
// (joined with newlines), lines starting with # or ; are comments.
func iniSection(text, section string) (map[string]any, bool) {
	vals := map[string]any{}
	found, in := false, false
	key := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			name := strings.TrimSpace(strings.Trim(strings.Split(strings.Split(line, "#")[0], ";")[0], " []"))
			in = name == section
			found = found || in
			key = ""
			continue
		}
		if !in {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if key != "" {
				if v := vals[key].(string); v == "" {
					vals[key] = trimmed
				} else {
					vals[key] = v + "\n" + trimmed
				}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		if !ok {
			continue
		}
		key = strings.TrimSpace(k)
		vals[key] = strings.TrimSpace(v)
	}
	return vals, found
}

// splitArgs turns an args-type option (a string pytest splits as a shell
// does, or a TOML list) into its arguments.
func splitArgs(v any) []string {
	switch v := v.(type) {
	case string:
		return shellSplit(v)
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, shellSplit(s)...)
			}
		}
		return out
	}
	return nil
}

// lines turns a linelist-type option into its lines.
func lines(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		for _, l := range strings.Split(v, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, strings.TrimSpace(s))
			}
		}
	}
	return out
}

// shellSplit splits s as Python's shlex.split does for the quoting
// configuration files use: whitespace separates, single quotes keep
// everything, double quotes keep everything but backslash escapes, a
// backslash outside quotes escapes the next character.
func shellSplit(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				i = len(s)
				break
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.ContainsRune(`"\$`+"`", rune(s[i+1])) {
					i++
				}
				cur.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			inWord = true
			i++
			cur.WriteByte(s[i])
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

var shellSafe = regexp.MustCompile(`^[\w@%+=:,./-]+$`)

// shellJoin quotes args so that shellSplit (and shlex.split) give them
// back.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if shellSafe.MatchString(a) {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'"'"'`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// withOverride returns args with "-o name=value" set: an earlier override
// of name is replaced.
func withOverride(args []string, name, value string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "-o" && strings.HasPrefix(out[i+1], name+"=") {
			out[i+1] = name + "=" + value
			return out
		}
	}
	return append(out, "-o", name+"="+value)
}

// overridden returns the value args give name with -o, if any.
func overridden(args []string, name string) (string, bool) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-o" && strings.HasPrefix(args[i+1], name+"=") {
			return strings.TrimPrefix(args[i+1], name+"="), true
		}
	}
	return "", false
}
