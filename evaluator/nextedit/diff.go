package nextedit

import (
	"fmt"
	"strconv"
	"strings"
)

// fileKind is how a commit changes one file.
type fileKind int

const (
	modified fileKind = iota
	added
	deleted
	renamed // or copied
	binary
	oddPath // a path git quotes (control characters, quotes)
)

// fileDiff is one file of a commit's diff: its paths, how it changed and
// its hunks in order.
type fileDiff struct {
	oldPath, path string
	kind          fileKind
	hunks         []*hunk
}

// hunk is one hunk of git's unified diff (three lines of context, the
// hunks git makes): where it starts in the old file (1-based; for a hunk
// that removes nothing, the line after which it inserts), the old and the
// new text of its lines (context included), and its text as git printed
// it, header first.
type hunk struct {
	file     *fileDiff
	oldStart int
	oldLines int
	old, new string
	// lead and trail are the context lines before and after its change.
	lead, trail string
	text        string
}

// parseDiff reads the output of git diff -U3 (without colour, with a/
// and b/ prefixes) into files and their hunks, in git's order.
func parseDiff(out string) ([]*fileDiff, error) {
	var files []*fileDiff
	var f *fileDiff
	var h *hunk
	var hb hunkBuilder
	lines := strings.SplitAfter(out, "\n")
	flush := func() {
		if h != nil {
			hb.finish(h)
			h = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" {
			continue
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			flush()
			f = &fileDiff{}
			f.oldPath, f.path = gitPaths(strings.TrimSuffix(strings.TrimPrefix(line, "diff --git "), "\n"))
			if f.path == "" {
				f.kind = oddPath
			}
			files = append(files, f)
		case f == nil:
			return nil, fmt.Errorf("diff: %q before the first file", strings.TrimSpace(line))
		case h != nil && (line[0] == ' ' || line[0] == '-' || line[0] == '+' || line[0] == '\\'):
			hb.add(line)
		case strings.HasPrefix(line, "@@ "):
			flush()
			var err error
			if h, err = hunkHeader(line); err != nil {
				return nil, err
			}
			h.file = f
			hb = hunkBuilder{text: line}
			f.hunks = append(f.hunks, h)
		default:
			flush()
			header(f, strings.TrimSuffix(line, "\n"))
		}
	}
	flush()
	return files, nil
}

// header reads one extended header line of a file's diff.
func header(f *fileDiff, line string) {
	set := func(k fileKind) {
		if f.kind != oddPath {
			f.kind = k
		}
	}
	switch {
	case strings.HasPrefix(line, "new file mode"):
		set(added)
	case strings.HasPrefix(line, "deleted file mode"):
		set(deleted)
	case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "copy from "):
		set(renamed)
		_, from, _ := strings.Cut(line, " from ")
		f.oldPath = from
	case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
		_, to, _ := strings.Cut(line, " to ")
		f.path = to
	case strings.HasPrefix(line, "Binary files "), line == "GIT binary patch":
		set(binary)
	}
	if (strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ")) && strings.Contains(line, `"`) {
		f.kind = oddPath
	}
}

// gitPaths reads "a/P b/Q" of a diff --git line; "" when git quoted a
// path or the line is ambiguous (a rename's lines say its paths).
func gitPaths(s string) (oldPath, path string) {
	if strings.HasPrefix(s, `"`) {
		return "", ""
	}
	if n := len(s) - len("a/ b/"); n > 0 && n%2 == 0 {
		p := s[2 : 2+n/2]
		if s == "a/"+p+" b/"+p {
			return p, p
		}
	}
	a, b, ok := strings.Cut(s, " b/")
	if !ok || !strings.HasPrefix(a, "a/") {
		return "", ""
	}
	return a[2:], b
}

// hunkHeader reads "@@ -a,b +c,d @@".
func hunkHeader(line string) (*hunk, error) {
	fields := strings.Fields(line)
	if len(fields) < 3 || !strings.HasPrefix(fields[1], "-") {
		return nil, fmt.Errorf("diff: bad hunk header %q", strings.TrimSpace(line))
	}
	start, n, err := lineRange(fields[1][1:])
	if err != nil {
		return nil, fmt.Errorf("diff: bad hunk header %q: %v", strings.TrimSpace(line), err)
	}
	return &hunk{oldStart: start, oldLines: n}, nil
}

func lineRange(s string) (start, n int, err error) {
	a, b, ok := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	n = 1
	if ok {
		n, err = strconv.Atoi(b)
	}
	return start, n, err
}

// hunkBuilder gathers a hunk's body lines.
type hunkBuilder struct {
	text  string
	lines []string // body lines, the marker first
}

func (b *hunkBuilder) add(line string) {
	b.text += line
	if line[0] == '\\' { // "\ No newline at end of file": the line before ends the file
		if n := len(b.lines); n > 0 {
			b.lines[n-1] = strings.TrimSuffix(b.lines[n-1], "\n")
		}
		return
	}
	if !strings.HasSuffix(line, "\n") {
		line += "\n" // the diff's last line, cut by the output's end
	}
	b.lines = append(b.lines, line)
}

// finish sets h's old and new text and its context around the change.
func (b *hunkBuilder) finish(h *hunk) {
	h.text = b.text
	var old, new strings.Builder
	lead, trail := 0, 0
	for i, l := range b.lines {
		if l[0] != ' ' {
			lead = i
			break
		}
		lead = i + 1
	}
	for i := len(b.lines) - 1; i >= lead; i-- {
		if b.lines[i][0] != ' ' {
			break
		}
		trail++
	}
	var leadText, trailText strings.Builder
	for i, l := range b.lines {
		body := l[1:]
		switch l[0] {
		case ' ':
			old.WriteString(body)
			new.WriteString(body)
			if i < lead {
				leadText.WriteString(body)
			} else if i >= len(b.lines)-trail {
				trailText.WriteString(body)
			}
		case '-':
			old.WriteString(body)
		case '+':
			new.WriteString(body)
		}
	}
	h.old, h.new, h.lead, h.trail = old.String(), new.String(), leadText.String(), trailText.String()
}

// offsetIn is where h's old text starts in text, the old file (its lines
// from h.oldStart), or an error when it is not there.
func (h *hunk) offsetIn(text string) (int, error) {
	line := h.oldStart - 1
	if h.oldLines == 0 {
		line = h.oldStart // inserted after line oldStart
	}
	off := 0
	for range line {
		i := strings.IndexByte(text[off:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("hunk at line %d: the file has fewer lines", h.oldStart)
		}
		off += i + 1
	}
	if !strings.HasPrefix(text[off:], h.old) {
		return 0, fmt.Errorf("hunk at line %d does not apply", h.oldStart)
	}
	return off, nil
}

// applied is the old file text with hunks (some of one file's, in order)
// applied, and where each one's new text starts in the result.
func applied(text string, hunks []*hunk) (string, []int, error) {
	var b strings.Builder
	at := make([]int, len(hunks))
	prev := 0
	for i, h := range hunks {
		off, err := h.offsetIn(text)
		if err != nil {
			return "", nil, err
		}
		if off < prev {
			return "", nil, fmt.Errorf("hunk at line %d overlaps the one before", h.oldStart)
		}
		b.WriteString(text[prev:off])
		at[i] = b.Len()
		b.WriteString(h.new)
		prev = off + len(h.old)
	}
	b.WriteString(text[prev:])
	return b.String(), at, nil
}
