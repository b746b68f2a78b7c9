// Package evaluator owns execution-based evaluation of completions: the
// benchmark task model (Task, Level, Exec), the Completer interface through
// which completions are obtained, grading of one completion in the sandbox
// (Verdict, Result), a bounded worker pool that streams results as they
// finish (Runner), a limit on sandbox runs shared by every Runner of a
// server (Pool), the append-only results journal that lets an
// interrupted run resume (Journal), and the partition of a benchmark into
// shards (Shard) whose results join into the whole run's (MergeResults).
// HumanEval-family tasks (ExecProgram) run as the human-eval-infilling
// harness runs them, with its 3 s default timeout, so that verdicts match
// it.
//
// Every result that did not pass has a Reason: the first meaningful error
// (reason.go). Failures of the environment are VerdictError, not
// VerdictFailed: a missing interpreter or test runner, a pytest usage
// error, and an import failure that the unmodified repository's tests show
// too — the unmodified repository decides whether an import failure is the
// environment's or the completion's (baseline.go). Repository tasks run
// with the interpreter their task, Config.Pythons or the repository's own
// virtual environment names (pythonFor).
//
// Loaders for benchmark formats live in evaluator/dataset, the bubblewrap
// sandbox in evaluator/sandbox, scores in evaluator/metrics and benchmark
// construction by grammar-based masking in evaluator/masking. This package
// never imports gRPC; server/ maps its types and sentinel errors.
package evaluator
