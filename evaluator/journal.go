package evaluator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"github.com/infill-dev/infill/internal/errkind"
)

// ErrCorruptJournal is returned when a journal line is not a result. A
// last line without its newline is a write cut short: it is dropped if it
// is the start of a record, kept if it is a whole one.
var ErrCorruptJournal = errkind.New(errkind.FailedPrecondition, "evaluator: corrupt results journal")

// JournalLineError is the ErrCorruptJournal of one line (1-based).
type JournalLineError struct {
	Line int
	Err  error
}

func (e *JournalLineError) Error() string {
	return fmt.Sprintf("line %d: not a result: %v", e.Line, e.Err)
}

func (e *JournalLineError) Unwrap() []error { return []error{ErrCorruptJournal, e.Err} }

// ErrJournalBusy is returned by OpenJournal when another run (another
// process, or another Journal in this one) has the journal open.
var ErrJournalBusy = errkind.New(errkind.Aborted, "evaluator: results journal in use by another run")

// Journal is an append-only JSON-lines file of Results. Each record is
// written with a single write followed by fsync, so after a crash at most
// the last line is torn; OpenJournal cuts such a line off. A journal has
// one writer at a time: OpenJournal takes an exclusive lock (flock) that
// Close releases.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	done map[string]bool
}

// resultKey identifies a sample across runs.
func resultKey(benchmark, taskID string, sample int) string {
	return benchmark + "\x00" + taskID + "\x00" + strconv.Itoa(sample)
}

// OpenJournal opens (creating if needed) the journal at path and returns the
// results already in it. It fails with ErrJournalBusy when another run
// holds the journal, and with ErrCorruptJournal, changing nothing, when
// the file is not a journal.
func OpenJournal(path string) (*Journal, []Result, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	j, results, err := openJournal(f)
	if err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open journal", Path: path, Err: err}
	}
	return j, results, nil
}

func openJournal(f *os.File) (*Journal, []Result, error) {
	if err := lockFile(f); err != nil {
		return nil, nil, err
	}
	results, st, err := ReadJournal(f)
	if err != nil {
		return nil, nil, err
	}
	if st.Torn {
		if err := f.Truncate(st.Good); err != nil {
			return nil, nil, err
		}
	}
	if _, err := f.Seek(st.Good, io.SeekStart); err != nil {
		return nil, nil, err
	}
	if st.NoNewline { // a whole last record: end its line before the next
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return nil, nil, err
		}
	}
	j := &Journal{f: f, done: map[string]bool{}}
	for _, r := range results {
		j.done[resultKey(r.Benchmark, r.TaskID, r.Sample)] = true
	}
	return j, results, nil
}

// JournalState describes the end of a journal as ReadJournal found it.
type JournalState struct {
	Good      int64 // bytes up to the end of the last whole record
	Torn      bool  // a record cut short follows Good (dropped)
	NoNewline bool  // the last record is whole but its newline is missing
}

// ReadJournal parses a results journal: JSON lines, each a Result with a
// task ID and a verdict. Blank lines are skipped. A last line without its
// newline that is the start of a record (a write cut short) is left out
// and reported as Torn; one that is a whole record is kept. Anything else
// that is not a result is ErrCorruptJournal, naming its line. It only
// reads: the CLI's report reads journals the way a run resumes them.
func ReadJournal(r io.Reader) ([]Result, JournalState, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var (
		out  []Result
		st   JournalState
		line int
	)
	for {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, JournalState{}, err
		}
		last := err == io.EOF
		if len(b) > 0 {
			line++
		}
		if t := bytes.TrimSpace(b); len(t) > 0 {
			res, perr := parseRecord(t)
			switch {
			case perr == nil:
				out = append(out, res)
				st.NoNewline = last
			case last && t[0] == '{' && !json.Valid(t):
				st.Torn = true // the start of a record: its write was cut short
				return out, st, nil
			default:
				return nil, JournalState{}, &JournalLineError{Line: line, Err: perr}
			}
		}
		st.Good += int64(len(b))
		if last {
			return out, st, nil
		}
	}
}

func parseRecord(b []byte) (Result, error) {
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return Result{}, err
	}
	if res.TaskID == "" || res.Verdict == "" {
		return Result{}, errors.New("no task_id or verdict")
	}
	return res, nil
}

// Done reports whether the sample is already in the journal.
func (j *Journal) Done(benchmark, taskID string, sample int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.done[resultKey(benchmark, taskID, sample)]
}

// Append writes r as one line and syncs it to disk.
func (j *Journal) Append(r *Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(b); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.done[resultKey(r.Benchmark, r.TaskID, r.Sample)] = true
	return nil
}

// Close closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}
