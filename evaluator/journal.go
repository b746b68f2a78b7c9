package evaluator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
)

// ErrCorruptJournal is returned when a complete journal line is not a
// valid result (a torn last line without its newline is tolerated).
var ErrCorruptJournal = errors.New("evaluator: corrupt results journal")

// Journal is an append-only JSON-lines file of Results. Each record is
// written with a single write followed by fsync, so after a crash at most
// the last line is torn; OpenJournal cuts such a line off.
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
// results already in it.
func OpenJournal(path string) (*Journal, []Result, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	results, good, err := readJournal(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	j := &Journal{f: f, done: map[string]bool{}}
	for _, r := range results {
		j.done[resultKey(r.Benchmark, r.TaskID, r.Sample)] = true
	}
	return j, results, nil
}

// readJournal parses complete lines and returns the offset after the last one.
func readJournal(r io.Reader) ([]Result, int64, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var (
		out  []Result
		good int64
		line int
	)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			line++
			if len(bytes.TrimSpace(b)) > 0 {
				var res Result
				if jerr := json.Unmarshal(b, &res); jerr != nil {
					return nil, 0, fmt.Errorf("%w: line %d: %v", ErrCorruptJournal, line, jerr)
				}
				out = append(out, res)
			}
			good += int64(len(b))
		}
		if err == io.EOF {
			return out, good, nil // a torn last line (no newline) is dropped
		}
		if err != nil {
			return nil, 0, err
		}
	}
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
