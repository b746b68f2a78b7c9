// Package evaluator owns execution-based evaluation of completions: the
// benchmark task model (Task, Level, Exec), the Completer interface through
// which completions are obtained, grading of one completion in the sandbox
// (Verdict, Result), a bounded worker pool that streams results as they
// finish (Runner), and the append-only results journal that lets an
// interrupted run resume (Journal).
//
// Loaders for benchmark formats live in evaluator/dataset, the bubblewrap
// sandbox in evaluator/sandbox, scores in evaluator/metrics and benchmark
// construction by grammar-based masking in evaluator/masking. This package
// never imports gRPC; server/ maps its types and sentinel errors.
package evaluator
