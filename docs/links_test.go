package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The repository's root, seen from this package's directory.
const root = ".."

var (
	// linkRE matches an inline link or image, [text](target) or
	// [text](target "title"); reference-style links are not used here.
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpanRE matches inline code, whose brackets are not links.
	codeSpanRE  = regexp.MustCompile("`[^`\n]*`")
	headingRE   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchorR = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// markdownFiles lists the repository's markdown files, leaving out what is
// not the project's prose: testdata (recorded inputs) and dot directories.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// prose returns the lines of a markdown document outside fenced code
// blocks, with inline code spans blanked.
func prose(doc string) []string {
	lines := outsideFences(doc)
	for i, line := range lines {
		lines[i] = codeSpanRE.ReplaceAllString(line, "``")
	}
	return lines
}

// outsideFences returns the lines of a markdown document, those of fenced
// code blocks blanked.
func outsideFences(doc string) []string {
	var out []string
	fence := ""
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			out = append(out, "")
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			out = append(out, "")
			continue
		}
		out = append(out, line)
	}
	return out
}

// anchors returns the anchors GitHub gives a document's headings (and any
// explicit <a name> anchors).
func anchors(doc string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range outsideFences(doc) {
		for _, m := range htmlAnchorR.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := slugify(m[2])
		if n := seen[slug]; n > 0 {
			out[slug+"-"+strconv.Itoa(n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// slugify is GitHub's heading anchor: lower case, markup and punctuation
// dropped (letters, digits, '-' and '_' kept), spaces turned into '-'.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestLinks checks every relative link of every markdown file: the target
// exists, and a #fragment into a markdown file names one of its headings.
func TestLinks(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 10 {
		t.Fatalf("found %d markdown files under %s; is this the repository?", len(files), root)
	}
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchorCache[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := anchors(string(b))
		anchorCache[path] = a
		return a
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for i, line := range prose(string(b)) {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %s does not exist", rel, i+1, target, path)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[frag] {
					t.Errorf("%s:%d: link %q: no heading with anchor #%s", rel, i+1, target, frag)
				}
			}
		}
	}
	t.Logf("%d relative links in %d markdown files", checked, len(files))
}

// TestREADMEShort keeps the entry point an entry point: the two set-up
// commands, the first completion and a table into docs/.
func TestREADMEShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 150 {
		t.Errorf("README.md has %d lines; keep it under 150 and move detail into docs/", n)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Language server: `infill lsp`":                           "language-server-infill-lsp",
		"OpenAI `/v1/completions`":                                "openai-v1completions",
		"llama.cpp `/infill`":                                     "llamacpp-infill",
		"Tabby's plugins (VS Code, JetBrains, Vim/Neovim)":        "tabbys-plugins-vs-code-jetbrains-vimneovim",
		"One benchmark over several servers":                      "one-benchmark-over-several-servers",
		"5. Reach it":                                             "5-reach-it",
		"Grading completions made elsewhere: `infill eval grade`": "grading-completions-made-elsewhere-infill-eval-grade",
	} {
		if got := slugify(in); got != want {
			t.Errorf("slugify(%q) = %q, want %q", in, got, want)
		}
	}
}
