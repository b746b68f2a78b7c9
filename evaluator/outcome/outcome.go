// Package outcome holds what a test run reports about itself, as every
// part of the evaluator records it and every client reads it: the test
// counts, the exception the code raised, the first failing test and the
// resource limit the run hit. It is a leaf: it imports nothing of the
// evaluator, so that a transport (the server, the CLI) can carry results
// without importing the sandbox.
package outcome

// TestCounts are a run's test outcomes as its test runner reported them
// (pytest, node's runner and vitest through infill's reporters, go test's
// events).
type TestCounts struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errors  int `json:"errors"`
	Skipped int `json:"skipped"`
}

// Exception is an exception the test code raised: its type name, str()
// and where it was raised (file:line, the path as the sandbox sees it).
type Exception struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Where   string `json:"where,omitempty"`
}

// Failure is the first failing test of a run as its runner saw it.
type Failure struct {
	// Test is the runner's name for it (pytest's node id
	// "tests/test_ops.py::test_add", or the module for a collection error;
	// a Go test; a node test file and test).
	Test string `json:"test"`
	// When is the phase: collect, setup, call, teardown or build.
	When string `json:"when"`
	// Crash is where the exception was raised and its message, when the
	// runner knows them (not for a module that could not be imported).
	Crash *Crash `json:"crash,omitempty"`
	// Report is the runner's report of the failure (its end), and Output
	// the test's captured output.
	Report string `json:"report,omitempty"`
	Output string `json:"output,omitempty"`
}

// Crash is where a test's exception was raised.
type Crash struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// Limit names a resource limit a run hit.
type Limit string

// Limits a run can hit. LimitThreads is a thread that could not start,
// which the process limit and the memory limit both cause (a thread's
// stack counts against the memory limit, a thread against the process
// limit), so its description names both.
const (
	LimitTime      Limit = "time"
	LimitCPU       Limit = "cpu"
	LimitMemory    Limit = "memory"
	LimitThreads   Limit = "threads"
	LimitProcesses Limit = "processes"
	LimitFileSize  Limit = "file_size"
	LimitOpenFiles Limit = "open_files"
	LimitOutput    Limit = "output"
)
