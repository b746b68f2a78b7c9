// Package humaneval holds no Go code of its own: bench.sh beside it times
// `infill eval grade` against the human-eval-infilling reference harness,
// refharness.py calls that harness for the evaluator's parity tests, and
// the two other Python scripts made the project's HumanEval test data. Its
// tests run bench.sh on a few tasks and each data script on a sample,
// checking their output against the committed data.
package humaneval
