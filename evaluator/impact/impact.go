package impact

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// TestID names one test: a pytest node id, relative to the map's RootDir.
type TestID = string

// Map is which tests execute which lines of a repository, as a trace run
// found it on the pristine code. It is plain JSON; keep it next to the
// benchmark that uses it.
type Map struct {
	Version int `json:"version"`
	// Python is the interpreter version and Tracer what recorded it
	// ("sys.settrace" or "sys.monitoring").
	Python string `json:"python,omitempty"`
	Tracer string `json:"tracer,omitempty"`
	// RootDir is pytest's rootdir relative to the repository root ("."
	// normally); node ids are relative to it.
	RootDir string `json:"rootdir"`
	// Tests are the collected node ids in collection order; Outcomes, in
	// the same order, say how each ended on the pristine code ("passed",
	// "failed", "skipped" or "not run").
	Tests    []TestID `json:"tests"`
	Outcomes []string `json:"outcomes"`
	// Always are indexes in Tests of tests whose lines are not known (they
	// replaced the tracer: a debugger, coverage, sys.settrace(None)); every
	// span selects them.
	Always []int `json:"always,omitempty"`
	// TestFiles are the files tests were collected from and the conftest.py
	// files, relative to the repository root; their lines are not in Files.
	TestFiles []string `json:"test_files"`
	// Files maps each executed source file (slash-separated, relative to
	// the repository root) to the tests executing its lines.
	Files map[string]FileImpact `json:"files"`
}

// FileImpact is one source file's part of a Map.
type FileImpact struct {
	// All are the lines every test depends on: executed at import or
	// collection time, outside any test, or in a module or class body.
	All []int `json:"all"`
	// Lines maps a line executed by some tests to their indexes in
	// Map.Tests (lines in All are not repeated here).
	Lines map[int][]int `json:"lines"`
	// Statements are the [first, last] line extents of statements that
	// span several lines (of a compound statement: its header).
	Statements [][2]int `json:"statements"`
	// Anchors are [first, last, line] for statements the compiler emits no
	// code for (docstrings and other constant expressions, global): code
	// put there runs exactly when line runs (the next statement of the
	// block with code, else the one before, else the block's header; 0 for
	// a module holding nothing else, which runs at import).
	Anchors [][3]int `json:"anchors"`
	// Bodies are the [first, last] line extents of function bodies: the
	// lines outside them are the file's shape (see SelectShaped).
	Bodies [][2]int `json:"bodies"`
}

// MapVersion is the Map format this package reads and writes (2: with
// FileImpact.Bodies).
const MapVersion = 2

// Span is a region of one file: lines First..Last, 1-based and inclusive.
type Span struct {
	File        string // slash-separated, relative to the repository root
	First, Last int
}

// ErrInvalidSpan is returned (wrapped) for a span that names no lines of a
// relative file.
var ErrInvalidSpan = errors.New("impact: invalid span")

// ByteSpan returns the Span of lines that bytes [start, end) of src (the
// contents of file) touch. An empty range touches the line it is on.
func ByteSpan(file string, src []byte, start, end int) (Span, error) {
	if start < 0 || end < start || end > len(src) {
		return Span{}, fmt.Errorf("%w: bytes [%d, %d) of a %d-byte file", ErrInvalidSpan, start, end, len(src))
	}
	first := 1 + bytes.Count(src[:start], []byte{'\n'})
	last := first
	if end > start {
		last = 1 + bytes.Count(src[:end-1], []byte{'\n'})
	}
	return Span{File: file, First: first, Last: last}, nil
}

func (s Span) validate() error {
	if s.File == "" || path.IsAbs(s.File) || path.Clean(s.File) != s.File || strings.HasPrefix(s.File, "../") || s.File == ".." {
		return fmt.Errorf("%w: file %q must be a clean relative slash-separated path", ErrInvalidSpan, s.File)
	}
	if s.First < 1 || s.Last < s.First {
		return fmt.Errorf("%w: lines %d..%d", ErrInvalidSpan, s.First, s.Last)
	}
	return nil
}

// Validate checks that m is a Map this package can use.
func (m *Map) Validate() error {
	if m.Version != MapVersion {
		return fmt.Errorf("impact: map version %d, want %d", m.Version, MapVersion)
	}
	if len(m.Outcomes) != len(m.Tests) {
		return fmt.Errorf("impact: map has %d outcomes for %d tests", len(m.Outcomes), len(m.Tests))
	}
	for _, i := range m.Always {
		if i < 0 || i >= len(m.Tests) {
			return fmt.Errorf("impact: map: always-selected test %d of %d", i, len(m.Tests))
		}
	}
	for f, fi := range m.Files {
		for l, ix := range fi.Lines {
			for _, i := range ix {
				if i < 0 || i >= len(m.Tests) {
					return fmt.Errorf("impact: map: %s:%d names test %d of %d", f, l, i, len(m.Tests))
				}
			}
		}
	}
	return nil
}

// SelectShaped returns the tests that execute any line of span, or reach it
// where it holds no code (see FileImpact.Anchors), in collection order,
// under the attribution rule in the package doc, for a grader that checks
// that a completion keeps
// its file's shape (the syntax tree outside function bodies: PytestShape)
// and runs the whole suite when it does not. A line run at import time
// outside every function body (a def or class line, a module- or
// class-level statement) then selects no test by itself: a completion
// that keeps the shape leaves it as it was. The tests are those executing
// the span's other lines; whole says the span holds only such shape lines,
// or an import-time line inside a function body (a function called at
// import), or lies in a test file: every test.
func SelectShaped(m *Map, span Span) (ids []TestID, whole bool, err error) {
	return selectTests(m, span, true)
}

func selectTests(m *Map, span Span, shaped bool) ([]TestID, bool, error) {
	if err := span.validate(); err != nil {
		return nil, false, err
	}
	if slices.Contains(m.TestFiles, span.File) {
		return slices.Clone(m.Tests), true, nil
	}
	fi := m.Files[span.File] // a file no test executed: only Always
	first, last := span.First, span.Last
	for widened := true; widened; { // until no statement sticks out
		widened = false
		for _, st := range fi.Statements {
			if st[0] <= last && st[1] >= first && (st[0] < first || st[1] > last) {
				first, last, widened = min(first, st[0]), max(last, st[1]), true
			}
		}
	}
	in := func(l int) bool { return l >= first && l <= last }
	var anchors []int
	for _, a := range fi.Anchors {
		if a[0] <= last && a[1] >= first {
			if a[2] == 0 {
				return slices.Clone(m.Tests), true, nil
			}
			anchors = append(anchors, a[2])
		}
	}
	reached := func(l int) bool { return in(l) || slices.Contains(anchors, l) }
	inBody := func(l int) bool {
		for _, b := range fi.Bodies {
			if l >= b[0] && l <= b[1] {
				return true
			}
		}
		return false
	}
	shape := false // the span reaches a line of the file's shape
	for _, l := range fi.All {
		if !reached(l) {
			continue
		}
		if shaped && !inBody(l) {
			shape = true
			continue
		}
		return slices.Clone(m.Tests), true, nil
	}
	chosen := make([]bool, len(m.Tests))
	for _, i := range m.Always {
		chosen[i] = true
	}
	for l, ix := range fi.Lines {
		if !reached(l) {
			continue
		}
		for _, i := range ix {
			chosen[i] = true
		}
	}
	var ids []TestID
	for i, c := range chosen {
		if c {
			ids = append(ids, m.Tests[i])
		}
	}
	if shape && len(ids) == 0 {
		return slices.Clone(m.Tests), true, nil
	}
	return ids, false, nil
}
