package evaluator_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infill-dev/infill/evaluator"
)

const (
	recA = `{"task_id":"a","verdict":"passed"}`
	recB = `{"task_id":"b","verdict":"failed"}`
)

// The end of a journal after a crash or an edit by hand: a whole last
// record without its newline is kept, a record cut short is dropped, and
// a file that is not a journal is refused unchanged.
func TestJournalTail(t *testing.T) {
	for name, tc := range map[string]struct {
		in      string
		want    int    // records read
		after   string // the file after one more append, "" when refused
		corrupt bool
	}{
		"whole":              {in: recA + "\n", want: 1, after: recA + "\n" + recB + "\n"},
		"blank lines":        {in: "\n" + recA + "\n\n", want: 1, after: "\n" + recA + "\n\n" + recB + "\n"},
		"no final newline":   {in: recA, want: 1, after: recA + "\n" + recB + "\n"},
		"cut short":          {in: recA + "\n" + recB[:12], want: 1, after: recA + "\n" + recB + "\n"},
		"cut short, alone":   {in: `{"task_id":"a","ver`, want: 0, after: recB + "\n"},
		"not a journal":      {in: "important notes", corrupt: true},
		"notes after":        {in: recA + "\nimportant notes", corrupt: true},
		"not a result":       {in: recA + "\n{}\n", corrupt: true},
		"not a result, last": {in: recA + "\n{}", corrupt: true},
		"bad line inside":    {in: recA[:10] + "\n" + recB + "\n", corrupt: true},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(path, []byte(tc.in), 0o644); err != nil {
				t.Fatal(err)
			}
			j, prev, err := evaluator.OpenJournal(path)
			if tc.corrupt {
				if !errors.Is(err, evaluator.ErrCorruptJournal) {
					t.Fatalf("err = %v, want ErrCorruptJournal", err)
				}
				if b, _ := os.ReadFile(path); string(b) != tc.in {
					t.Fatalf("a refused file changed: %q", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(prev) != tc.want {
				t.Fatalf("read %d records, want %d", len(prev), tc.want)
			}
			if err := j.Append(&evaluator.Result{TaskID: "b", Verdict: evaluator.VerdictFailed}); err != nil {
				t.Fatal(err)
			}
			j.Close()
			b, _ := os.ReadFile(path)
			if !sameLines(string(b), tc.after) {
				t.Fatalf("file after append:\n%s\nwant\n%s", b, tc.after)
			}
		})
	}
}

// sameLines compares journals line by line, each record by its task and
// verdict (an appended record carries more fields than the fixtures).
func sameLines(got, want string) bool {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] == w[i] {
			continue
		}
		if !strings.HasPrefix(g[i], `{"task_id":"b"`) || !strings.Contains(g[i], `"verdict":"failed"`) || w[i] != recB {
			return false
		}
	}
	return true
}

// One writer per journal: a second open fails until the first is closed,
// so two runs cannot interleave their lines in one file.
func TestJournalBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.jsonl")
	j, _, err := evaluator.OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := evaluator.OpenJournal(path); !errors.Is(err, evaluator.ErrJournalBusy) {
		t.Fatalf("second open: %v, want ErrJournalBusy", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, _, err := evaluator.OpenJournal(path)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	j2.Close()
}
